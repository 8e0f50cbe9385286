"""Every provider, described once (issue 26, "one provider, one place"; decision 0104).

A :class:`ProviderSpec` says everything about a provider that code outside its adapter needs: its name, the models it
serves, its limits per batch, its default quotas, the options and hyperparameters it takes, how a model is priced,
its API key's secret, the SDK whose errors ``providers.sdk_errors`` maps, where its adapter and its simulator live
(import paths, loaded on first use). Every table elsewhere is read from ``SPECS``: the request checks, the OpenAPI
schema, the routing of the compatible doors, the settings' secrets, the adapters' registration, the CDK app's secrets
and enabled providers, the local stack and the simulators. ``tests/unit/test_provider_literals.py`` fails when a
provider's name is written as a string anywhere else.

Cheap to import on purpose: the API functions load it on their cold path (``make bench`` measures it), and the CDK
app and the SDK's CLI read it too. It imports only the standard library and ``constants``, never an SDK, pydantic or
boto3; regular expressions stay strings here and are compiled where they are used.

It sits below ``models`` and ``settings`` (``.importlinter``), which read it, so it cannot live in ``providers/``
(a layer above them, whose package loads the adapters' base class).
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Final, NamedTuple

from batch_gateway import constants

CHAT = "chat"
_MODEL_CHARS = "[A-Za-z0-9._:@/-]"  # models.requests.MODEL_RE's characters, for the ECMA-262 patterns below
MiB = 1024 * 1024
_NO_OPTIONS: MappingProxyType[str, frozenset[str]] = MappingProxyType({})


# Named tuples, not dataclasses: immutable all the same, and about a seventh of a frozen dataclass's cost to build at
# import (decision 0090: the API functions' cold import counts every exec'd method).
class ModelNames(NamedTuple):
    """Which model names a provider serves, said the three ways the code needs it (they must agree; the tests of
    each use hold them to it)."""

    check: str  # a Python regex searched in a job's model (ASCII, models.requests.MODEL_RE): create refuses the rest
    refusal: str  # create's 400 when the check fails; ``{model}`` is the model
    refusal_detail: str  # the 400 detail's message
    schema: str  # the same rule as an ECMA-262 pattern of the whole name (docs/openapi.json's model pattern)
    routes: str | None = None  # a Python regex the compatible doors fullmatch: a model it matches runs here (0045)
    routes_hint: str = ""  # the routed names in words, for the doors' 400 on a model no provider serves


class ProviderSpec(NamedTuple):
    """One provider. Only ``name`` is a key anything is stored under; the rest may change with a release. Built with
    keywords only."""

    name: str  # the registration name: a job's ``provider``, metrics' dimension, prices.json's and quotas' key
    label: str  # the provider's name in messages ("Amazon Bedrock")
    title: str  # one word for generated names: the OpenAPI body schemas (``OpenAIChatBatch``), the doors' labels
    adapter: str  # "module:class" of its ``providers.base.BatchProvider`` subclass, imported on first use
    sdk: str  # the module whose exceptions ``providers.sdk_errors`` maps: a Stainless SDK, "botocore", "google.genai"
    max_requests: int  # the provider's own limits per batch; Plan never exceeds them (an adapter may lower per model)
    max_bytes: int
    # The variable holding the ARN of its API key's Secrets Manager secret (the CDK app creates one secret per keyed
    # provider, ``batch-gateway/<name>-api-key``); None: keyless, the functions' own roles call it (Bedrock).
    secret_env: str | None
    models: ModelNames
    # Development only: the simulator standing in for the provider ("module:class" in batch_gateway_dev, a string
    # since the wheel never imports dev code); key_env and base_url_env below.
    simulator: str
    endpoints: tuple[str, ...] = (CHAT,)  # what ``endpoint`` may name; a chat-only provider records none on a job
    # endpoint -> (pattern, the served models in words): the models the provider serves on that endpoint in a batch.
    # The pattern is both a Python regex (searched) and an ECMA-262 one (docs/openapi.json), anchored at the start
    # only; an endpoint not named takes every model ``models.check`` takes.
    endpoint_models: MappingProxyType[str, tuple[str, str]] = MappingProxyType({})
    # Hyperparameter bounds that differ from models.requests.HYPERPARAMETERS'; None: the provider does not take it.
    hyperparameters: MappingProxyType[str, tuple[float, float] | None] = MappingProxyType({})
    # endpoint -> the provider_options a caller may pass through (only what the provider documents for batches).
    options: MappingProxyType[str, frozenset[str]] = _NO_OPTIONS
    # Default quotas (decision 0080): model or "*" -> {limit field of models.quotas.QuotaLimits: n}.
    quotas: MappingProxyType[str, MappingProxyType[str, int]] = MappingProxyType({})
    organisation_limits: frozenset[str] = frozenset()  # quota fields that are the account's, across models (0087)
    # The price table (prices.json) keys a model by a prefix of its id. Non-empty: ids carry more than the model (an
    # inference profile's geography, an ARN), and the key starts at the first of these markers (Bedrock).
    price_key_starts: tuple[str, ...] = ()
    # Provider headers a caller may ask to pass through (decision 0129): a Python regex the lower-case header name
    # fullmatches (the deployment's allow-list names which of them it takes, ``models.provider_headers``); None: none.
    # ``list_headers``: those whose value is a comma-separated list, each member allow-listed on its own.
    passthrough_headers: str | None = None
    list_headers: frozenset[str] = frozenset()
    # What a pass-through header's value changes: hyperparameter bounds it raises (a beta -> {name: (low, high)}),
    # and the values under which a request above the price row's ``long_context.above`` input tokens is priced at
    # the row's long-context rates (decision 0129).
    header_hyperparameters: MappingProxyType[str, MappingProxyType[str, tuple[float, float]]] = MappingProxyType({})
    long_context_headers: frozenset[str] = frozenset()
    # Development only: the SDK's own variables for a real key (the local stack calls the real API when one is set)
    # and for its base URL (pointed at the simulator by the local stack and the test accounts).
    key_env: str | None = None
    base_url_env: tuple[str, ...] = ()
    # The provider's final batch statuses that leave requests unanswered -> what those requests became ("canceled" or
    # "expired": a RequestCounts field and an item status).
    unfinished: MappingProxyType[str, str] = MappingProxyType({})
    # An errored item's finish_details.code as the adapter records it (lower case) -> the retry outcome it is
    # (models.retry.OUTCOMES); the adapter's comment says what the code is (an error type, code or status word).
    error_outcomes: MappingProxyType[str, str] = MappingProxyType({})
    # The longest a new batch may take to show in the provider's list after its create answered (none publishes a
    # figure: a minute, to be safe). A reconcile that lists nothing of ours concludes nothing was accepted only after
    # the create timeout and this lag have passed (decision 0111).
    list_lag_seconds: float = 60.0

    @property
    def keyless(self) -> bool:
        return self.secret_env is None

    @property
    def chat_only(self) -> bool:
        return self.endpoints == (CHAT,)

    def price_key(self, model: str) -> str:
        """The model as the price table names it: Bedrock's ``us.anthropic.claude-...`` and ARNs without geography."""
        if not self.price_key_starts:
            return model
        name = model.rsplit("/", 1)[-1]
        starts = [name.find(marker) for marker in self.price_key_starts if marker in name]
        return name[min(starts) :] if starts else name


def _frozen(table: dict[str, dict[str, int]]) -> MappingProxyType[str, MappingProxyType[str, int]]:
    return MappingProxyType({key: MappingProxyType(value) for key, value in table.items()})


ANY_MODEL = "*"

ANTHROPIC: Final = ProviderSpec(
    name="anthropic",
    label="Anthropic",
    title="Anthropic",
    adapter="batch_gateway.providers.anthropic:AnthropicBatchProvider",
    sdk="anthropic",
    max_requests=100_000,
    max_bytes=256 * MiB,
    secret_env="ANTHROPIC_SECRET_ARN",
    models=ModelNames(
        check=r"\Aclaude",
        refusal="model '{model}' is not an Anthropic model name (they start with 'claude-')",
        refusal_detail="not an Anthropic model",
        schema=f"^claude{_MODEL_CHARS}{{0,194}}$",
        routes=r"\Aclaude-.+\Z",
        routes_hint="claude-*",
    ),
    hyperparameters=MappingProxyType({"temperature": (0.0, 1.0)}),
    # The request headers of Anthropic's API but its version (the SDK's own): anthropic-beta (a comma-separated list
    # of betas) and anthropic-workspace-id are the documented ones on the Message Batches routes (decision 0129).
    passthrough_headers=r"anthropic-(?!version\Z)[a-z0-9][a-z0-9-]{0,62}",
    list_headers=frozenset({"anthropic-beta"}),
    # The large-output beta (Message Batches only): max_tokens up to 300,000 on the models that take it (the API
    # refuses it on the others). The 128K-output beta of Claude 3.7 Sonnet stays within the gateway's own bound.
    header_hyperparameters=MappingProxyType({"output-300k-2026-03-24": MappingProxyType({"max_tokens": (1, 300_000)})}),
    # The 1M-context beta of Sonnet 4 and 4.5: a request of more than 200K input tokens costs the long-context rates.
    long_context_headers=frozenset({"context-1m-2025-08-07"}),
    options=MappingProxyType(
        {
            # cache_control: Anthropic's automatic prompt caching of the whole prompt (its cache writes and reads are
            # priced)
            CHAT: frozenset({"metadata", "thinking", "tools", "tool_choice", "service_tier", "cache_control"}),
        }
    ),
    # Message Batches API rate limits, tier 1 (docs.claude.com/en/api/rate-limits): 100,000 batch requests in the
    # processing queue and 50 requests a minute to the Message Batches API. Both are the organisation's across models:
    # one ledger for all Anthropic models (organisation_limits). The 50 a minute count polls and result reads too:
    # creates get 20 of them.
    quotas=_frozen({ANY_MODEL: {"requests_in_flight": 100_000, "creates_per_minute": 20}}),
    # docs.claude.com/en/api/rate-limits: "the number of batch requests in the processing queue" and requests a minute
    # "to the Message Batches API", per organisation.
    organisation_limits=frozenset({"requests_in_flight", "creates_per_minute"}),
    simulator="batch_gateway_dev.simulators.anthropic:AnthropicBatches",
    key_env="ANTHROPIC_API_KEY",
    base_url_env=("ANTHROPIC_BASE_URL",),
    # No unfinished statuses: a batch ends as "ended" whatever happened, and each item says canceled or expired.
    # error_outcomes: the error's type (docs.claude.com/en/api/errors).
    error_outcomes=MappingProxyType(
        {"rate_limit_error": "rate_limited", "overloaded_error": "overloaded", "api_error": "server_error"}
    ),
)

# OpenAI models that only the embeddings, completions and moderations endpoints serve; chat and responses take the rest
_OPENAI_CHAT = "^(?!(?:ft:)?(?:text-embedding-|davinci-002|babbage-002)|(?:omni|text)-moderation-)"

OPENAI: Final = ProviderSpec(
    name="openai",
    label="OpenAI",
    title="OpenAI",
    adapter="batch_gateway.providers.openai:OpenAIBatchProvider",
    sdk="openai",
    max_requests=50_000,
    max_bytes=200 * MiB,
    secret_env="OPENAI_SECRET_ARN",
    models=ModelNames(
        check=r"\A(?!claude)",
        refusal=f"model '{{model}}' is an Anthropic model; use provider '{ANTHROPIC.name}'",
        refusal_detail="not an OpenAI model",
        schema=f"^(?!claude)[A-Za-z0-9]{_MODEL_CHARS}{{0,199}}$",
        routes=r"\A(?:(?:ft:)?(?:gpt-|o1|o3|o4|text-embedding-|chatgpt-|davinci-002|babbage-002)"
        r"|(?:omni|text)-moderation-).*\Z",
        routes_hint="gpt-*, o1*, o3*, o4*, text-embedding-*, chatgpt-*, davinci-002, babbage-002, "
        "omni-moderation-*, text-moderation-*",
    ),
    endpoints=(CHAT, "responses", "embeddings", "completions", "moderations"),
    # Which models each batch endpoint serves (developers.openai.com/api/docs/models/<model>, "Endpoints"): the
    # legacy completions endpoint runs the GPT base models (gpt-3.5-turbo-instruct says "Batch: not supported"),
    # moderations the moderation models (openai.types.ModerationModel), embeddings the embedding models; chat and
    # responses none of those.
    endpoint_models=MappingProxyType(
        {
            CHAT: (_OPENAI_CHAT, "not an embedding, completions or moderation model"),
            "responses": (_OPENAI_CHAT, "not an embedding, completions or moderation model"),
            "embeddings": ("^(?:ft:)?text-embedding-", "text-embedding-*"),
            "completions": ("^(?:ft:)?(?:davinci-002|babbage-002)", "davinci-002, babbage-002"),
            "moderations": ("^(?:omni|text)-moderation-", "omni-moderation-*, text-moderation-*"),
        }
    ),
    hyperparameters=MappingProxyType({"top_k": None}),  # None: not supported by the provider
    options=MappingProxyType(
        {
            CHAT: frozenset(
                {
                    "response_format",
                    "seed",
                    "logprobs",
                    "top_logprobs",
                    "presence_penalty",
                    "frequency_penalty",
                    "tools",
                    "tool_choice",
                    "reasoning_effort",
                    "service_tier",
                    "user",
                    "logit_bias",
                    "parallel_tool_calls",
                    "metadata",  # with store: the chat completion kept in the OpenAI account, tagged
                    "store",
                }
            ),
            "responses": frozenset({"reasoning", "text", "tools", "tool_choice", "store", "user", "truncation"}),
            "embeddings": frozenset({"dimensions", "encoding_format", "user"}),
            # openai.types.CompletionCreateParams but n and best_of (one choice per request) and streaming
            "completions": frozenset(
                {"echo", "frequency_penalty", "logit_bias", "logprobs", "presence_penalty", "seed", "suffix", "user"}
            ),
            "moderations": frozenset(),  # openai.types.ModerationCreateParams: input and model only
        }
    ),
    # "Batch queue limit" per model (platform.openai.com/docs/guides/rate-limits and each model's page, tier 1): input
    # tokens of the organisation's batches not yet ended, per model; a batch over it fails validation with
    # `token_limit_exceeded`. No published limit on batches or creates. `*` is the smallest tier-1 figure (gpt-4o's).
    quotas=_frozen(
        {
            ANY_MODEL: {"enqueued_tokens": 90_000},
            "gpt-4o": {"enqueued_tokens": 90_000},
            "gpt-4o-mini": {"enqueued_tokens": 2_000_000},
            "gpt-4.1": {"enqueued_tokens": 900_000},
            "gpt-4.1-mini": {"enqueued_tokens": 2_000_000},
            "gpt-4.1-nano": {"enqueued_tokens": 2_000_000},
        }
    ),
    simulator="batch_gateway_dev.simulators.openai:OpenAIBatches",
    key_env="OPENAI_API_KEY",
    base_url_env=("OPENAI_BASE_URL",),
    unfinished=MappingProxyType({"expired": "expired", "cancelled": "canceled"}),
    error_outcomes=MappingProxyType({"rate_limit_exceeded": "rate_limited"}),  # the error's code
)

# Bedrock model families whose batch body the adapter writes (providers.bedrock.FAMILIES): what the id contains.
_BEDROCK_FAMILIES = r"anthropic\.claude|amazon\.nova"

BEDROCK: Final = ProviderSpec(
    name="bedrock",
    label="Amazon Bedrock",
    title="Bedrock",
    adapter="batch_gateway.providers.bedrock:BedrockBatchProvider",
    sdk="botocore",
    # Batch inference's documented default quotas; the deployment's (Settings.bedrock) may differ per model.
    max_requests=constants.BEDROCK_MAX_RECORDS,
    max_bytes=constants.BEDROCK_MAX_INPUT_BYTES,
    secret_env=None,
    models=ModelNames(
        check=f"(?i){_BEDROCK_FAMILIES}",
        refusal="model '{model}' is not a Bedrock model this gateway supports: Anthropic Claude "
        "('anthropic.claude-...') and Amazon Nova ('amazon.nova-...') model ids, their inference profiles "
        "('us.anthropic.claude-...') or ARNs",
        refusal_detail="supported Bedrock families: anthropic.claude, amazon.nova",
        # lower case only here; the service also takes other cases of the family names
        schema=f"^(?={_MODEL_CHARS}*(anthropic\\.claude|amazon\\.nova))[A-Za-z0-9]{_MODEL_CHARS}{{0,199}}$",
        # foundation model ids, cross-region inference profiles (`us.`, `eu.`, `apac.`, `global.`, ...) and ARNs
        routes=rf"\A(?:arn:aws[a-z-]*:bedrock:.+|(?:[a-z]{{2,6}}\.)?(?:{_BEDROCK_FAMILIES})-.+)\Z",
        routes_hint="anthropic.claude-*, amazon.nova-*, their inference profiles (us./eu./apac./global.) and Bedrock "
        "ARNs",
    ),
    hyperparameters=MappingProxyType({"temperature": (0.0, 1.0)}),  # Claude's and Nova's range
    # Service Quotas "Sum of in-progress and submitted batch inference jobs using a base model" (per model and Region;
    # docs.aws.amazon.com/general/latest/gr/bedrock.html): 10 is the common default, some models have 20.
    quotas=_frozen({ANY_MODEL: {"batches_in_flight": 10}}),
    price_key_starts=("anthropic.", "amazon."),
    simulator="batch_gateway_dev.simulators.bedrock:BedrockJobs",
    base_url_env=("AWS_ENDPOINT_URL_BEDROCK", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"),
    unfinished=MappingProxyType({"Stopped": "canceled", "Expired": "expired"}),
    # The runtime's error codes (a small job's synchronous calls): botocore's error Code, lower case.
    error_outcomes=MappingProxyType(
        {
            "throttlingexception": "rate_limited",
            "internalserverexception": "server_error",
            "serviceunavailableexception": "server_error",
            "modeltimeoutexception": "server_error",
        }
    ),
)

# Gemini's generationConfig fields a caller may set through provider_options (the rest of Gemini's allowed options
# sit at the request's top; providers.gemini puts each where it goes).
GOOGLE_GENERATION_OPTIONS = frozenset(
    {
        "thinkingConfig",
        "seed",
        "presencePenalty",
        "frequencyPenalty",
        "responseLogprobs",
        "logprobs",
        "candidateCount",
        "responseModalities",
        "mediaResolution",
    }
)

# Gemini's embedding models (the rest of its models generate content)
_GEMINI_EMBEDDING = "^gemini-embedding-"
_GEMINI_CHAT = "^(?!gemini-embedding-)"

GOOGLE: Final = ProviderSpec(
    name="google",
    label="Google Gemini",
    title="Google",
    adapter="batch_gateway.providers.gemini:GeminiBatchProvider",
    sdk="google.genai",
    # Google's documented limits: an input file up to 2 GB and no fixed request count. Our chunk file is spooled to
    # the Submit function's /tmp (Lambda's default 512 MB), so a chunk holds at most 400 MB; requests: a large cap.
    max_requests=100_000,
    max_bytes=400 * MiB,
    secret_env="GOOGLE_SECRET_ARN",  # the Gemini API key
    models=ModelNames(
        check=r"\Agemini",
        refusal="model '{model}' is not a Gemini model name (they start with 'gemini-', such as 'gemini-2.5-flash')",
        refusal_detail="not a Gemini model",
        schema=f"^gemini{_MODEL_CHARS}{{0,194}}$",
        routes=r"\Agemini-.+\Z",
        routes_hint="gemini-* (gemini-embedding-* on /v1/embeddings)",
    ),
    endpoints=(CHAT, "embeddings"),
    # Gemini's embedding models (gemini-embedding-001, ...: ai.google.dev/gemini-api/docs/embeddings) run through
    # batches.create_embeddings (models/{model}:asyncBatchEmbedContent), the generating models through
    # batchGenerateContent; neither takes the other's (decision 0130).
    endpoint_models=MappingProxyType(
        {
            CHAT: (_GEMINI_CHAT, "a Gemini model that generates content, not gemini-embedding-*"),
            "embeddings": (_GEMINI_EMBEDDING, "gemini-embedding-*"),
        }
    ),
    hyperparameters=MappingProxyType({}),  # Gemini takes temperature 0-2, top_p, top_k and up to 5 stop sequences
    options=MappingProxyType(
        {
            # GenerateContentRequest fields: the generation settings go into generationConfig, the others at the
            # request's top (providers.gemini)
            CHAT: GOOGLE_GENERATION_OPTIONS | frozenset({"safetySettings", "cachedContent", "labels"}),
            # EmbedContentRequest's own fields (the request's content is the text)
            "embeddings": frozenset({"taskType", "title", "outputDimensionality"}),
        }
    ),
    # Gemini API batch mode (ai.google.dev/gemini-api/docs/rate-limits, tier 1): 100 concurrent batch requests
    # (batches), and enqueued tokens per model; `*` takes 3,000,000, the smallest tier-1 figure of the 2.5 models.
    quotas=_frozen({ANY_MODEL: {"batches_in_flight": 100, "enqueued_tokens": 3_000_000}}),
    # The concurrent batch requests are the project's, its enqueued tokens each model's.
    organisation_limits=frozenset({"batches_in_flight"}),
    simulator="batch_gateway_dev.simulators.gemini:GeminiBatches",
    key_env="GEMINI_API_KEY",
    base_url_env=("GOOGLE_GEMINI_BASE_URL",),  # google-genai's own base URL variable
    unfinished=MappingProxyType({"JOB_STATE_CANCELLED": "canceled", "JOB_STATE_EXPIRED": "expired"}),
    # The error line's google.rpc status word.
    error_outcomes=MappingProxyType(
        {
            "resource_exhausted": "rate_limited",
            "unavailable": "overloaded",
            "internal": "server_error",
            "deadline_exceeded": "server_error",
        }
    ),
)

SPECS: tuple[ProviderSpec, ...] = (ANTHROPIC, OPENAI, BEDROCK, GOOGLE)  # in this order wherever providers are listed
BY_NAME: MappingProxyType[str, ProviderSpec] = MappingProxyType({spec.name: spec for spec in SPECS})
PROVIDERS: tuple[str, ...] = tuple(BY_NAME)  # every provider the gateway has an adapter for
KEYED: tuple[str, ...] = tuple(spec.name for spec in SPECS if not spec.keyless)  # one API key secret each
ENDPOINTS: tuple[str, ...] = tuple(dict.fromkeys(endpoint for spec in SPECS for endpoint in spec.endpoints))


class WebhookPush(NamedTuple):
    """A provider that signs the end of a batch as a webhook under the Standard Webhooks scheme (decisions 0073,
    0135): the unauthenticated route it posts to, the secret it signs with, the events that end a batch."""

    provider: str  # the ProviderSpec's name: only a job of this provider is woken
    title: str  # construct ids: "<title>Push", "<title>WebhookSecret", "<title>Webhook" (OpenAI's kept since 0073)
    path: str  # POST <path> on the API, without IAM or an authorizer
    secret_name: str  # Secrets Manager: the webhook's signing secret (whsec_...), put there by the operator
    secret_env: str  # the variable holding that secret's ARN (the receiver's only secret)
    ended_events: frozenset[str]  # event types that say a batch ended; others are acknowledged and ignored
    # The provider's batch names start with it (what Submit records): an event naming the bare id gets it added.
    batch_prefix: str = ""


WEBHOOK_PUSH: MappingProxyType[str, WebhookPush] = MappingProxyType(
    {
        # platform.openai.com/docs/guides/webhooks: a project webhook; data.id is the batch id.
        OPENAI.name: WebhookPush(
            provider=OPENAI.name,
            title="OpenAI",
            path=constants.OPENAI_WEBHOOK_PATH,
            secret_name=constants.OPENAI_WEBHOOK_SECRET_NAME,
            secret_env=constants.ENV_OPENAI_WEBHOOK_SECRET_ARN,
            ended_events=frozenset({"batch.completed", "batch.failed", "batch.expired", "batch.cancelled"}),
        ),
        # ai.google.dev/gemini-api/docs/webhooks: a static (project-level) webhook, HMAC-signed; the SDK's
        # WebhookSubscribedEvent lists batch.succeeded, batch.failed and batch.expired (a cancel is ours: the cancel
        # path wakes the job itself). data.id names the batch; batches/ is added when it is bare.
        GOOGLE.name: WebhookPush(
            provider=GOOGLE.name,
            title="Gemini",
            path=constants.GEMINI_WEBHOOK_PATH,
            secret_name=constants.GEMINI_WEBHOOK_SECRET_NAME,
            secret_env=constants.ENV_GEMINI_WEBHOOK_SECRET_ARN,
            ended_events=frozenset({"batch.succeeded", "batch.failed", "batch.expired", "batch.cancelled"}),
            batch_prefix="batches/",
        ),
    }
)


# --- failover (decision 0140) ----------------------------------------------------------------------------------------
# The same model served by more than one provider: a job whose lanes allow "failover" may send its items to the
# other provider's equivalent when its own fails outright. Each family is a tuple of (provider name, a Python regex
# its model ids fullmatch, the model id a failover sends there): the Claude models both Anthropic and Bedrock serve,
# by the ids the providers publish (Anthropic's dated id, its alias, ``-latest``; Bedrock's model id, in-region or
# through a cross-region inference profile: us., eu., apac., global.).
_CLAUDE_ON_BOTH = (
    ("claude-opus-4-5", "20251101"),
    ("claude-opus-4-1", "20250805"),
    ("claude-opus-4", "20250514"),
    ("claude-sonnet-4-5", "20250929"),
    ("claude-sonnet-4", "20250514"),
    ("claude-haiku-4-5", "20251001"),
    ("claude-3-7-sonnet", "20250219"),
    ("claude-3-5-haiku", "20241022"),
    ("claude-3-haiku", "20240307"),
)


def _claude_family(name: str, date: str) -> tuple[tuple[str, str, str], ...]:
    dated = f"{name}-{date}"
    return (
        (ANTHROPIC.name, rf"{re.escape(name)}(?:-{date}|-latest|-0)?", dated),
        (BEDROCK.name, rf"(?:(?:us|eu|apac|global)\.)?anthropic\.{re.escape(dated)}-v1:0", f"anthropic.{dated}-v1:0"),
    )


EQUIVALENT_MODELS: tuple[tuple[tuple[str, str, str], ...], ...] = tuple(
    _claude_family(name, date) for name, date in _CLAUDE_ON_BOTH
)


def failover_model(provider: str, model: str, enabled: tuple[str, ...] | frozenset[str]) -> tuple[str, str] | None:
    """(provider, model) another enabled provider serves ``model`` of ``provider`` as, or None."""
    for family in EQUIVALENT_MODELS:
        if any(name == provider and re.fullmatch(pattern, model) for name, pattern, _ in family):
            for name, _, target in family:
                if name != provider and name in enabled:
                    return name, target
    return None
