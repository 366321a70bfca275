"""Drives `redline serve` with the official OpenAI Python client (pinned in requirements.txt).

Usage: openai_client.py BASE_URL MODEL
Prints one JSON object: the whole and streamed chat answers, a completion, and what the client
raises for an invalid request. The Rust test (crates/daemon/tests/serve_clients.rs) checks them
against the server's raw HTTP answers.
"""

import json
import sys

import openai


def main() -> None:
    base_url, model = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=120)
    messages = [{"role": "user", "content": "hello there"}]

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
