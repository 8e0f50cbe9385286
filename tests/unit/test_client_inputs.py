"""gllm ``LMInput`` -> the HTTP API's request forms."""

from __future__ import annotations

import pytest

from batch_gateway.client.inputs import to_api_request, to_api_requests
from batch_gateway.contract.errors import InvalidRequestError


def test_a_prompt_string_is_sent_as_is():
    assert to_api_request("What color is the sky?") == "What color is the sky?"


def test_plain_string_parts_become_one_user_message():
    assert to_api_request(["Describe", "briefly"]) == [
        {"role": "user", "content": [{"type": "text", "text": "Describe"}, {"type": "text", "text": "briefly"}]}
    ]


def test_a_single_text_part_becomes_a_plain_user_message():
    assert to_api_request([{"type": "text", "text": "Hi"}]) == [{"role": "user", "content": "Hi"}]


def test_non_text_parts_are_passed_through_in_the_user_message():
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}
    assert to_api_request(["What is this?", image]) == [
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]}
    ]


def test_messages_without_system_stay_a_list():
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Name a bird"},
    ]
    assert to_api_request(messages) == messages


def test_system_messages_are_lifted_into_the_system_field():
    assert to_api_request(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "system", "content": [{"type": "text", "text": "Answer in French."}]},
            {"role": "user", "content": "Name a bird"},
        ]
    ) == {"messages": [{"role": "user", "content": "Name a bird"}], "system": "Be brief.\n\nAnswer in French."}


def test_an_api_request_object_is_kept_with_its_hyperparameters():
    request = {"messages": [{"role": "user", "content": "Hi"}], "system": "Be brief", "max_tokens": 64}
    assert to_api_request(request) == request


def test_system_messages_inside_a_request_object_join_its_system_prompt():
    request = {"messages": [{"role": "system", "content": "B"}, {"role": "user", "content": "Hi"}], "system": "A"}
    assert to_api_request(request) == {"messages": [{"role": "user", "content": "Hi"}], "system": "A\n\nB"}


def test_a_single_message_dict_becomes_a_one_message_list():
    assert to_api_request({"role": "user", "content": "Hi"}) == [{"role": "user", "content": "Hi"}]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "empty"),
        ([], "empty"),
        (42, "got int"),
        ([{"role": "user", "content": "hi"}, "loose text"], "not both"),
        ([{"role": "system", "content": "only system"}], "no user message"),
        ([{"role": "user"}], "no content"),
        ({"prompt": "hi"}, "messages"),
    ],
)
def test_inputs_that_fit_no_form_are_rejected_with_a_reason(value, reason):
    with pytest.raises(ValueError, match=reason):
        to_api_request(value)


def test_all_bad_inputs_of_a_batch_are_reported_at_once():
    with pytest.raises(InvalidRequestError) as info:
        to_api_requests({"ok": "fine", "bad1": 1, "bad2": []})
    assert [d["id"] for d in info.value.details] == ["bad1", "bad2"]


def test_requests_must_be_a_dict_of_ids():
    with pytest.raises(TypeError, match="dict"):
        to_api_requests(["a", "b"])
    with pytest.raises(InvalidRequestError, match="empty"):
        to_api_requests({})
