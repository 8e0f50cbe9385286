"""Names shared by the runtime and the CDK app.

With ``provider_specs`` (each provider's description, which reads these), the only part of ``batch_gateway`` that
``stacks/`` may import: plain constants, no imports, no side effects.
"""

SERVICE_NAME = "batch-gateway"
METRICS_NAMESPACE = "BatchGateway"
# Events on the stack's own bus (decision 0068): source and detail types; progress marks in % of items done.
EVENT_SOURCE = "batch-gateway"
EVENT_STATUS_CHANGED = "Batch Job Status Changed"
EVENT_PROGRESS = "Batch Job Progress"
EVENT_REPLANNED = "Batch Job Replanned"  # the deadline planner moved items to another lane (decision 0142)
PROGRESS_MARKS = (25, 50, 75)
# Custom metrics (namespace METRICS_NAMESPACE, dimension service=SERVICE_NAME on each; batch_gateway.metrics, decision
# 0069) the dashboard and alarms read. Extra dimensions: status (JobsEnded), provider (the Provider* ones, NoticeLag).
METRIC_JOBS_CREATED = "JobsCreated"
METRIC_JOBS_ENDED = "JobsEnded"
METRIC_REQUESTS_ACCEPTED = "RequestsAccepted"
METRIC_REQUESTS_FINISHED = "RequestsFinished"
METRIC_JOB_COST = "JobCostUSD"
METRIC_PROVIDER_ERRORS = "ProviderErrors"
METRIC_PROVIDER_THROTTLES = "ProviderThrottles"
METRIC_PROVIDER_AUTH_ERRORS = "ProviderAuthErrors"
METRIC_NOTICE_LAG = "NoticeLagSeconds"
METRIC_BUDGET_ABOVE_80 = "BudgetAbove80Percent"
METRIC_SIGNALS_FAILED = "SignalsFailed"
METRIC_WEBHOOK_DELIVERIES = "WebhookDeliveries"
METRIC_WEBHOOK_FAILURES = "WebhookFailures"
STACK_NAME = "BatchGatewayStack"

# Environment variables read by the Lambda settings (batch_gateway.settings).
ENV_JOBS_TABLE = "JOBS_TABLE"
ENV_PAYLOAD_BUCKET = "PAYLOAD_BUCKET"
ENV_STATE_MACHINE_ARN = "STATE_MACHINE_ARN"
# Each provider's API key secret: the variable is its spec's `secret_env` (batch_gateway.provider_specs).
# The providers this deployment runs (context `providers`, comma separated), on every function that creates jobs: a job
# for another provider is refused at create (decision 0102). Every provider: provider_specs.PROVIDERS.
ENV_ENABLED_PROVIDERS = "ENABLED_PROVIDERS"
ENV_POLL_SCHEDULE = "POLL_SCHEDULE_SECONDS"  # comma separated, e.g. "30,60,120,300,600"
ENV_PRESIGN_EXPIRY = "PRESIGN_EXPIRY_SECONDS"
ENV_DROP_PREFIX = "DROP_FOLDER_PREFIX"
ENV_DROP_OWNER = "DROP_FOLDER_OWNER"
ENV_EVENT_BUS_NAME = "EVENT_BUS_NAME"
ENV_MAX_CHUNK_REQUESTS = "MAX_CHUNK_REQUESTS"  # operator's lower limit, optional
ENV_MAX_CHUNK_BYTES = "MAX_CHUNK_BYTES"  # operator's lower limit, optional
# An input file up to this many bytes is checked at create; a larger one by the workflow's Plan (decision 0054)
ENV_SYNC_INPUT_MAX_BYTES = "SYNC_INPUT_MAX_BYTES"
DEFAULT_SYNC_INPUT_MAX_BYTES = 16 * 1024**2
ENV_RECONCILE_WAIT_SECONDS = "RECONCILE_WAIT_SECONDS"  # overrides BatchProvider.unlisted_wait (decision 0111)
ENV_DEPLOYMENT_ID = "DEPLOYMENT_ID"  # stamped on provider batches: stacks sharing one provider key touch only their own
# Bedrock (no API key: the functions' roles call it). The role Bedrock assumes to read a job's input and write its
# output; set only when the deployment enables Bedrock.
ENV_BEDROCK_ROLE_ARN = "BEDROCK_ROLE_ARN"
ENV_BEDROCK_TIMEOUT_HOURS = "BEDROCK_TIMEOUT_HOURS"  # 24-168
ENV_BEDROCK_SMALL_JOBS = "BEDROCK_SMALL_JOBS"  # "on_demand" (default) or "reject": jobs below the minimum records
ENV_BEDROCK_MIN_RECORDS = "BEDROCK_MIN_RECORDS"
ENV_BEDROCK_MAX_RECORDS = "BEDROCK_MAX_RECORDS"
ENV_BEDROCK_MAX_INPUT_BYTES = "BEDROCK_MAX_INPUT_BYTES"
ENV_BEDROCK_MAX_JOB_BYTES = "BEDROCK_MAX_JOB_BYTES"
ENV_BEDROCK_INVOCATION_TYPE = "BEDROCK_INVOCATION_TYPE"  # "converse" (default) or "invoke_model" (decision 0132)
ENV_BEDROCK_MODEL_LIMITS = "BEDROCK_MODEL_LIMITS"  # JSON: model id -> {"min_records", "max_records", "max_bytes"}
ENV_BEDROCK_ON_DEMAND_CONCURRENCY = "BEDROCK_ON_DEMAND_CONCURRENCY"
ENV_BEDROCK_KMS_KEY_ID = "BEDROCK_KMS_KEY_ID"  # the customer-managed key Bedrock encrypts its output with
# Gateway API keys (decision 0045): the secret their HMACs are keyed with (Keys and KeyAuthorizer only).
ENV_KEY_PEPPER_SECRET_ARN = "API_KEY_PEPPER_SECRET_ARN"
KEY_PEPPER_SECRET_NAME = "batch-gateway/api-key-pepper"
ENV_PRICE_OVERRIDES_PARAMETER = "PRICE_OVERRIDES_PARAMETER"  # SSM parameter of price rows over prices.json (0060)
ENV_RETRY_DEFAULT = "RETRY_DEFAULT"  # JSON: the retry option of jobs that give none (decision 0066); unset: off
ENV_PROMPT_CACHE_DEFAULT = "PROMPT_CACHE_DEFAULT"  # the prompt_cache option of jobs that give none (decision 0128)
PROMPT_CACHE_AUTO, PROMPT_CACHE_OFF = "auto", "off"
PROMPT_CACHE_MODES = (PROMPT_CACHE_AUTO, PROMPT_CACHE_OFF)  # what a job's `prompt_cache` may be
DEFAULT_PROMPT_CACHE = PROMPT_CACHE_AUTO
# Provider header pass-through (decision 0129): JSON {provider: {header name: [allowed values] | "*"}} (context
# `provider_headers`, checked at synth by models.provider_headers.parse_allow_list); unset: no header passes.
ENV_PROVIDER_HEADERS_JSON = "PROVIDER_HEADERS_JSON"
# Result reuse (decision 0127): the max_age_seconds of jobs that give no reuse option (unset: reuse off), and the
# most any job may ask (and how long an indexed result is kept).
ENV_REUSE_DEFAULT_MAX_AGE = "REUSE_DEFAULT_MAX_AGE"
ENV_REUSE_MAX_AGE = "REUSE_MAX_AGE"
ENV_LANES_JSON = "LANES_JSON"  # the synchronous lanes and the deadline planner (decision 0140)
# Lanes (decision 0140): the ways a job may send its requests, in order of cost
LANE_BATCH, LANE_FLEX, LANE_SYNC, LANE_FAILOVER = "batch", "flex", "sync", "failover"
LANES = (LANE_BATCH, LANE_FLEX, LANE_SYNC, LANE_FAILOVER)
DEFAULT_LANES = (LANE_BATCH, LANE_FLEX, LANE_SYNC)
# Deadlines (decision 0142): a provider's batch window (the time it gives a batch to end: 24 h for Anthropic, OpenAI
# and Gemini; Bedrock's is the deployment's BEDROCK_TIMEOUT_HOURS), and how far beyond it a deadline may be set.
BATCH_WINDOW_HOURS = 24
DEADLINE_BEYOND_WINDOW_SECONDS = 24 * 3600
MIN_DEADLINE_SECONDS = 60
MAX_COST_USD = 1_000_000_000  # the most a job's max_cost_usd may say (DynamoDB keeps numbers up to 9.9e125 only)
MIN_COST_USD = 0.000001  # the least (a millionth of a dollar; DynamoDB keeps no magnitude below 1e-130)
# The deadline and lanes of the compatible doors' jobs (their wire formats carry none; decision 0142): context
# `door_deadline` {"deadline_seconds": n | null, "lanes": [...] | null}; unset: none, as the doors' jobs before them.
ENV_DOOR_DEADLINE_SECONDS = "DOOR_DEADLINE_SECONDS"
ENV_DOOR_LANES = "DOOR_LANES"  # comma-separated, e.g. "batch,sync"
DEFAULT_REUSE_MAX_AGE = 30 * 24 * 3600  # 30 days
REUSE_SCOPES = ("owner",)  # what a job's reuse.scope may be: never across owners
# Input guardrails (decision 0124): the personal-data screen of jobs that name none (context `guardrails`), and the
# detector that screens ("builtin", "comprehend" or "bedrock-guardrail:<id>:<version>"); unset: off, builtin.
ENV_GUARDRAILS_PII = "GUARDRAILS_PII"
ENV_PII_DETECTOR = "PII_DETECTOR"
PII_MODES = (
    "off",
    "flag",
    "redact",
    "reject",
)  # contract.jobs.PII_MODES (the SDK's; test_pii_detector holds them equal)
PII_DETECTORS = ("builtin", "comprehend", "bedrock-guardrail")  # the last as bedrock-guardrail:<id>:<version>
RETRY_OUTCOMES = ("expired", "rate_limited", "overloaded", "server_error")  # what a job's `retry.on` may name
RETRY_MAX_ATTEMPTS = 5  # the most `retry.max_attempts` may be
# Webhooks (decisions 0070, 0071): "true" lets webhook URLs use plain http to loopback (context webhook_loopback_http:
# the local stack's template only); the seconds between delivery attempts (context webhook_retry_schedule, about 24 h
# in all; after the last attempt the dead-letter queue); the webhook queue (fan-out and delivery messages).
ENV_WEBHOOK_LOOPBACK_HTTP = "WEBHOOK_LOOPBACK_HTTP"
ENV_WEBHOOK_RETRY_SCHEDULE = "WEBHOOK_RETRY_SCHEDULE_SECONDS"
ENV_WEBHOOK_QUEUE_URL = "WEBHOOK_QUEUE_URL"
DEFAULT_WEBHOOK_RETRY_SCHEDULE = "5,300,1800,7200,18000,36000,36000"
# Quotas (decisions 0080, 0081): the limit overrides per provider and model (models.quotas.parse_overrides' JSON,
# context `quotas`) and the owners' fairness weights ({principal: weight}, context `owner_weights`; default 1).
ENV_QUOTAS_JSON = "QUOTAS_JSON"
ENV_OWNER_WEIGHTS_JSON = "OWNER_WEIGHTS_JSON"
ENV_KEY_RATE_LIMIT = "API_KEY_RATE_LIMIT"  # requests per second per gateway key (KeyAuthorizer; decision 0046)
DEFAULT_KEY_RATE_LIMIT = 20
# The key mount (decision 0134): the native routes a second time under this prefix, behind the key authorizer. Under it
# the admin routes answer only an admin key (the authorizer denies them to any other). CONSOLE_ORIGIN (context
# `console_origin`) is the one browser origin the mount answers with CORS headers; unset: none.
KEY_MOUNT_PREFIX = "/k"
KEY_MOUNT_ADMIN_PATHS = ("/keys", "/keys/*", "/budgets", "/limits")
ENV_CONSOLE_ORIGIN = "CONSOLE_ORIGIN"
CORS_ALLOW_HEADERS = ("Authorization", "Content-Type", "Idempotency-Key")
CORS_EXPOSE_HEADERS = ("Retry-After", "x-amzn-RequestId")
# Per-owner limits on creates (decision 0119): the deployment's default, JSON {"creates_per_minute": n | null,
# "open_jobs": n | null} (context `owner_limits`), on the functions that create jobs; unset: no limit.
ENV_OWNER_LIMITS_JSON = "OWNER_LIMITS_JSON"
DEFAULT_OWNER_LIMITS = {"creates_per_minute": 60, "open_jobs": 100}  # cdk.json's `owner_limits`

DEFAULT_POLL_SCHEDULE = "30,60,120,300,600,900"
DEFAULT_PRESIGN_EXPIRY = 900
DEFAULT_DROP_PREFIX = "inbox/"
# Bedrock batch inference's documented default quotas (Service Quotas can change them per account and model).
BEDROCK_MIN_RECORDS = 100
BEDROCK_MAX_RECORDS = 50_000
BEDROCK_MAX_INPUT_BYTES = 1024**3  # per input file
BEDROCK_MAX_JOB_BYTES = 5 * 1024**3  # per job
BEDROCK_TIMEOUT_HOURS = 24
BEDROCK_ON_DEMAND_CONCURRENCY = 4
BEDROCK_SMALL_JOB_MODES = ("on_demand", "reject")
# Which record format a Bedrock batch job of text-only requests uses: one Converse body for every model family, or
# each family's native InvokeModel body (requests with tools always use the latter: decision 0132).
BEDROCK_INVOCATION_TYPES = ("converse", "invoke_model")
ON_DEMAND_BATCH_PREFIX = "on-demand:"  # provider batch ids of chunks run on demand (priced at full, not batch, price)
OUTBOX_PREFIX = "outbox/"
UPLOADS_PREFIX = "uploads/"  # POST /uploads: input files uploaded through presigned URLs
DOORS_PREFIX = "doors/"  # the compatible doors' files; the workflow writes their output files (decision 0045)
OPENAI_DOOR_PREFIX = DOORS_PREFIX + "openai/"  # the OpenAI door's files and upload parts, per owner digest
# An OpenAI batch's output_expires_after (decision 0125): its output and error files are written with this object tag
# saying after how many whole days (1 to the most, 30) they expire, and one bucket lifecycle rule per day count
# deletes them then.
EXPIRES_AFTER_DAYS_TAG = "batch-gateway-expires-after-days"
EXPIRES_AFTER_MAX_DAYS = 30  # OpenAI's most: 2,592,000 seconds

# DynamoDB layout: one table, job and chunk items under the job's partition.
TABLE_PK = "pk"
TABLE_SK = "sk"
OWNER_INDEX = "by-owner"
OWNER_INDEX_PK = "owner"
OWNER_INDEX_SK = "created_at"
OPEN_INDEX = "open-jobs"  # sparse: OPEN_INDEX_PK "open" (not ended) or "unannounced" (ended, end event not sent)
OPEN_INDEX_PK = "open_job"
OPEN_INDEX_SK = "created_at"
# Sparse, keys only: chunk items that carry a provider batch id; the OpenAI webhook receiver finds a batch's job by it
# (decision 0073).
PROVIDER_BATCH_INDEX = "by-provider-batch"
PROVIDER_BATCH_INDEX_PK = "provider_batch_id"

# Lambda entry points: function id -> handler path inside the bundle.
API_HANDLERS = {
    "Create": "lambdas.create.handler",
    "Status": "lambdas.status.handler",
    "Retrieve": "lambdas.retrieve.handler",
    "List": "lambdas.list_jobs.handler",
    "Cancel": "lambdas.cancel.handler",
    "AnthropicCompat": "lambdas.anthropic_compat.handler",
    "OpenAICompat": "lambdas.openai_compat.handler",
    "Keys": "lambdas.keys.handler",
    "Budgets": "lambdas.budgets.handler",
    "Limits": "lambdas.limits.handler",
    "Uploads": "lambdas.uploads.handler",
    "Webhooks": "lambdas.webhooks.handler",  # subscriptions (decision 0070)
}
AUTHORIZER_HANDLER = "lambdas.authorizer.handler"  # the compatible doors' REQUEST authorizer, function KeyAuthorizer
WORKFLOW_HANDLERS = {
    "Plan": "lambdas.plan.handler",
    "Submit": "lambdas.submit.handler",
    "Poll": "lambdas.poll.handler",
    "Retry": "lambdas.retry.handler",
    "Finalize": "lambdas.finalize.handler",
    "MarkFailed": "lambdas.mark_failed.handler",
}
# The workflow's Park step (decision 0072): a small function in the API bundle that stores the task token.
PARK_HANDLER = "lambdas.park.handler"
# POST /providers/{openai,google}/webhook: a provider's signed batch events wake the job's workflow (decisions 0073,
# 0135; provider_specs.WEBHOOK_PUSH). One handler module; one function per provider, each reading only its secret.
PROVIDER_WEBHOOK_HANDLER = "lambdas.provider_webhook.handler"
OPENAI_WEBHOOK_PATH = "/providers/openai/webhook"
ENV_OPENAI_WEBHOOK_SECRET_ARN = "OPENAI_WEBHOOK_SECRET_ARN"  # the secret OpenAI signs the project's webhooks with
OPENAI_WEBHOOK_SECRET_NAME = "batch-gateway/openai-webhook-secret"
GEMINI_WEBHOOK_PATH = "/providers/google/webhook"
ENV_GEMINI_WEBHOOK_SECRET_ARN = "GEMINI_WEBHOOK_SECRET_ARN"  # the secret of the Gemini API project's static webhook
GEMINI_WEBHOOK_SECRET_NAME = "batch-gateway/gemini-webhook-secret"
WEBHOOK_MAX_BYTES = 64 * 1024  # a provider's batch event is a few hundred bytes; larger bodies are refused unread
# Bedrock's job state changes on the default bus (decision 0135): an EventBridge rule invokes this function.
BEDROCK_JOB_EVENT_HANDLER = "lambdas.bedrock_job_event.handler"
BEDROCK_JOB_EVENT_SOURCE = "aws.bedrock"  # only AWS may put events with an aws.* source
BEDROCK_JOB_EVENT_DETAIL_TYPE = "Batch Inference Job State Change"
# the statuses that end a job (ModelInvocationJobStatus); the rule matches only these
BEDROCK_JOB_ENDED_STATUSES = ("Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired")
# The webhook queue's consumer: fans bus events out to targets and delivers them (decisions 0070, 0071).
WEBHOOK_DELIVERY_HANDLER = "lambdas.webhook_deliveries.handler"
INGEST_HANDLER = "lambdas.ingest.handler"  # S3 drop folder, fed by SQS
SWEEPER_HANDLER = "lambdas.sweeper.handler"  # scheduled: stuck jobs and orphaned provider batches
SWEEP_EVERY_MINUTES = 30
# A submitter's claim on a chunk lasts this long: longer than any Lambda may run (15 min), so a live claim's owner
# may still be sending and is never taken over, and an expired one's owner is surely gone.
CLAIM_LEASE_SECONDS = 960
# A claim taken by an invocation with a clock (a Lambda context) ends this long after that invocation's own deadline
# instead: Lambda stops it then, so it sends nothing later, and a chunk whose sender was cut off by its timeout is
# reconciled a minute later, not 16 (decision 0010).
CLAIM_LEASE_AFTER_DEADLINE_SECONDS = 60

# Error class names the state machine retries (raised by the workflow Lambdas). Step Functions matches a task's
# error by its exact class name, never by a base class: so every TransientError subclass (contract.errors, ports) is
# named here, which tests/infra/test_retried_errors.py checks against the class tree. ProviderKeyRejectedError is not
# transient but is retried on purpose: the key may have been rotated since this instance read it, and the retry
# reads it again. A plain list, so stacks/ reads it without importing runtime code.
RETRYABLE_ERRORS = [
    "TransientError",
    "ProviderUnavailableError",
    "ProviderRateLimitedError",
    "ProviderAmbiguousError",
    "WriteConflictError",
    "ProviderKeyRejectedError",
    "LaneNotDoneError",  # a lane chunk with requests left (decision 0140): Poll catches it; named should one escape
]
