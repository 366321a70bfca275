"""Drives `redline serve` with the official OpenAI Python client (pinned in requirements.txt).

Usage: openai_client.py BASE_URL MODEL [logprobs | base PROMPT]
Prints one JSON object: the whole and streamed chat answers, a completion and what the client
raises for an invalid request; or, with `logprobs`, the log-probabilities of both endpoints,
whole and streamed, each response validated against the client's own types; or, with `base`, for
a model without a chat template, a greedy completion of PROMPT (8 tokens, with its legacy
logprobs) and what the client raises for a chat request. The Rust tests
(redline/tests/serve_clients.rs, serve_gemma.rs) check them against the server's raw HTTP
answers.
"""

import json
import sys

import openai
from openai.types import Completion
from openai.types.completion_choice import Logprobs
from openai.types.chat import ChatCompletion, ChatCompletionChunk


def chat_entries(logprobs) -> list:
    """A chat choice's logprobs.content as plain lists."""
    return [
        {
            "token": entry.token,
            "logprob": entry.logprob,
            "bytes": entry.bytes,
            "top": [[top.token, top.logprob, top.bytes] for top in entry.top_logprobs],
        }
        for entry in logprobs.content
    ]


def completion_entries(logprobs) -> list:
    """A completion choice's legacy logprobs as one entry per token."""
    return [
        {"token": token, "logprob": logprob, "top": top, "offset": offset}
        for token, logprob, top, offset in zip(
            logprobs.tokens, logprobs.token_logprobs, logprobs.top_logprobs, logprobs.text_offset, strict=True
        )
    ]


def logprobs_report(client: openai.OpenAI, model: str, messages: list) -> dict:
    """Both endpoints asked for log-probabilities, whole and streamed (with the usage chunk)."""
    chat_args = dict(model=model, messages=messages, max_tokens=16, temperature=0, logprobs=True, top_logprobs=3)
    whole = client.chat.completions.create(**chat_args)
    ChatCompletion.model_validate(whole.to_dict())
    report = {
        "chat": {
            "text": whole.choices[0].message.content,
            "finish_reason": whole.choices[0].finish_reason,
            "completion_tokens": whole.usage.completion_tokens,
            "entries": chat_entries(whole.choices[0].logprobs),
        }
    }
    pieces, entries, usage = [], [], None
    for chunk in client.chat.completions.create(**chat_args, stream=True, stream_options={"include_usage": True}):
        ChatCompletionChunk.model_validate(chunk.to_dict())
        usage = chunk.usage or usage
        for choice in chunk.choices:
            pieces.append(choice.delta.content or "")
            if choice.logprobs is not None:
                entries.extend(chat_entries(choice.logprobs))
    report["chat_stream"] = {"text": "".join(pieces), "completion_tokens": usage.completion_tokens, "entries": entries}

    completion_args = dict(model=model, prompt="the cat", max_tokens=8, temperature=0, logprobs=3)
    whole = client.completions.create(**completion_args)
    Completion.model_validate(whole.to_dict())
    report["completion"] = {
        "text": whole.choices[0].text,
        "finish_reason": whole.choices[0].finish_reason,
        "completion_tokens": whole.usage.completion_tokens,
        "entries": completion_entries(whole.choices[0].logprobs),
    }
    pieces, entries, usage = [], [], None
    for chunk in client.completions.create(**completion_args, stream=True, stream_options={"include_usage": True}):
        # The client types a completion chunk as a whole Completion, whose finish_reason may not be
        # null as it is in every chunk but the last (OpenAI's too): the logprobs are validated.
        usage = chunk.usage or usage
        for choice in chunk.choices:
            pieces.append(choice.text)
            if choice.logprobs is not None:
                Logprobs.model_validate(choice.logprobs.to_dict())
                entries.extend(completion_entries(choice.logprobs))
    report["completion_stream"] = {
        "text": "".join(pieces),
        "completion_tokens": usage.completion_tokens,
        "entries": entries,
    }
    return report


def base_report(client: openai.OpenAI, model: str, prompt: str, messages: list) -> dict:
    """A base model: a greedy completion, and the error a chat request raises."""
    whole = client.completions.create(model=model, prompt=prompt, max_tokens=8, temperature=0, logprobs=1)
    Completion.model_validate(whole.to_dict())
    report = {
        "version": openai.__version__,
        "models": [m.id for m in client.models.list()],
        "completion": {
            "model": whole.model,
            "text": whole.choices[0].text,
            "finish_reason": whole.choices[0].finish_reason,
            "completion_tokens": whole.usage.completion_tokens,
            "tokens": whole.choices[0].logprobs.tokens,
        },
    }
    try:
        client.chat.completions.create(model=model, messages=messages, max_tokens=8, temperature=0)
        report["chat"] = {"raised": None}
    except openai.BadRequestError as error:
        report["chat"] = {"raised": type(error).__name__, "status": error.status_code, "code": error.code}
    return report


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
    messages = [{"role": "user", "content": "hello there"}]
    if sys.argv[3:] == ["logprobs"]:
        print(json.dumps(logprobs_report(client, model, messages)))
        return
    if sys.argv[3:4] == ["base"]:
        print(json.dumps(base_report(client, model, sys.argv[4], messages)))
        return

    whole = client.chat.completions.create(model=model, messages=messages, max_tokens=16, temperature=0)
    pieces, stream_finish, stream_roles = [], None, []
    stream = client.chat.completions.create(
        model=model, messages=messages, max_tokens=16, temperature=0, stream=True
    )
    for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.role:
                stream_roles.append(choice.delta.role)
            if choice.delta.content:
                pieces.append(choice.delta.content)
            if choice.finish_reason:
                stream_finish = choice.finish_reason

    completion = client.completions.create(model=model, prompt="the cat", max_tokens=8, temperature=0)

    try:
        client.chat.completions.create(model=model, messages=messages, temperature=-1)
        invalid = {"raised": None}
    except openai.BadRequestError as error:
        invalid = {"raised": type(error).__name__, "status": error.status_code, "param": error.param}

    print(
        json.dumps(
            {
                "version": openai.__version__,
                "models": [m.id for m in client.models.list()],
                "chat": {
                    "id": whole.id,
                    "text": whole.choices[0].message.content,
                    "role": whole.choices[0].message.role,
                    "finish_reason": whole.choices[0].finish_reason,
                    "prompt_tokens": whole.usage.prompt_tokens,
                    "completion_tokens": whole.usage.completion_tokens,
                },
                "stream": {"text": "".join(pieces), "finish_reason": stream_finish, "roles": stream_roles},
                "completion": {
                    "text": completion.choices[0].text,
                    "finish_reason": completion.choices[0].finish_reason,
                    "completion_tokens": completion.usage.completion_tokens,
                },
                "invalid": invalid,
            }
        )
    )


if __name__ == "__main__":
    main()
