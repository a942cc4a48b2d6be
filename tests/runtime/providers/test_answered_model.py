"""Each recorded model answer names the model (and version) that gave it."""

from __future__ import annotations

from openseal.runtime.providers.base import ModelResponse
from openseal.runtime.providers.openai_provider import parse_document


def test_the_endpoint_s_model_name_is_kept_through_the_record() -> None:
    document = {
        "model": "qwen2.5-7b-instruct-2024-09-19",
        "choices": [{"message": {"content": "fine"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    answered = parse_document(document, structured=False)
    assert answered.model == "qwen2.5-7b-instruct-2024-09-19"
    recorded = answered.to_json()
    assert recorded["model"] == "qwen2.5-7b-instruct-2024-09-19"
    assert ModelResponse.from_json(recorded) == answered


def test_an_endpoint_that_does_not_say_records_no_name_of_its_own() -> None:
    answered = parse_document({"choices": [{"message": {"content": "x"}}]}, structured=False)
    assert answered.model is None and "model" not in answered.to_json()
