"""Drives a `redline serve` that needs an API key with the official OpenAI Python client
(pinned in requirements.txt).

Usage: openai_auth.py BASE_URL MODEL KEY
Prints one JSON object: what the client raises with a wrong key and with none sent, and what it gets
with the right one. The Rust test (redline/tests/serve_auth.rs) checks it.
"""

import json
import sys

import openai


def attempt(base_url: str, model: str, key: str | None) -> dict:
    # The client will not start without a key; with the header omitted per request it sends
    # none.
    client = openai.OpenAI(base_url=base_url, api_key=key or "unsent", max_retries=0, timeout=120)
    headers = {"Authorization": openai.Omit()} if key is None else None
    try:
        completion = client.completions.create(
            model=model, prompt="the cat", max_tokens=4, temperature=0, extra_headers=headers
        )
        models = [m.id for m in client.models.list(extra_headers=headers)]
        return {"raised": None, "text": completion.choices[0].text, "models": models}
    except openai.APIStatusError as error:
        return {
            "raised": type(error).__name__,
            "status": error.status_code,
            "code": error.code,
            "type": error.type,
            "message": error.message,
        }


def main() -> None:
    base_url, model, key = sys.argv[1], sys.argv[2], sys.argv[3]
    print(
        json.dumps(
            {
                "wrong": attempt(base_url, model, key + "-wrong"),
                "none": attempt(base_url, model, None),
                "right": attempt(base_url, model, key),
            }
        )
    )


if __name__ == "__main__":
    main()
