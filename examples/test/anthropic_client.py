"""The `anthropic` Python package (from PyPI) against cursor-gateway and the replica.

    python anthropic_client.py BASE_URL API_KEY REPLICA_ORIGIN

A streamed two-round tool loop, count_tokens, an image, a thinking block replayed with its
signature (and a tampered one refused), the error mapping and the model listing. Prints
`ok   NAME` / `FAIL NAME: why` lines; the caller counts them.
"""

import base64
import sys
import urllib.request

import anthropic

MODEL = "claude-cursor-composer-2.5"
SHOUT = {
    "name": "shout",
    "description": "Upper-cases text",
    "input_schema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()

failures = 0


def check(name, ok, why=""):
    global failures
    if ok:
        print(f"ok   {name}")
    else:
        failures += 1
        print(f"FAIL {name}: {why}")


def script(replica, body):
    request = urllib.request.Request(f"{replica}/replica/script", data=body.encode(), method="POST")
    urllib.request.urlopen(request).read()


def tool_round(client, messages, text):
    """One streamed request that must end in a shout call; answers it with the upper-cased text."""
    messages.append({"role": "user", "content": f'tool: shout {{"text": "{text}"}}'})
    with client.messages.stream(model=MODEL, max_tokens=1024, messages=messages, tools=[SHOUT]) as stream:
        message = stream.get_final_message()
    calls = [b for b in message.content if b.type == "tool_use"]
    if message.stop_reason != "tool_use" or len(calls) != 1 or calls[0].input != {"text": text}:
        return None
    messages.append({"role": "assistant", "content": [c.model_dump() for c in message.content]})
    messages.append(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": calls[0].id, "content": text.upper()}]}
    )
    with client.messages.stream(model=MODEL, max_tokens=1024, messages=messages, tools=[SHOUT]) as stream:
        final = stream.get_final_message()
    messages.append({"role": "assistant", "content": [c.model_dump() for c in final.content]})
    return "".join(b.text for b in final.content if b.type == "text")


def main():
    base, key, replica = sys.argv[1:4]
    client = anthropic.Anthropic(base_url=base, api_key=key, max_retries=0)

    messages = []
    first = tool_round(client, messages, "one")
    second = tool_round(client, messages, "two")
    check("a streamed two-round tool loop", first and "ONE" in first and second and "TWO" in second, f"{first!r} {second!r}")

    counted = client.messages.count_tokens(model=MODEL, messages=messages + [{"role": "user", "content": "next"}], tools=[SHOUT])
    check("count_tokens is a positive count", counted.input_tokens > 0, counted)

    image = client.messages.create(
        model=MODEL,
        max_tokens=256,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                    {"type": "text", "text": "describe it"},
                ],
            }
        ],
    )
    check("an image is accepted", image.stop_reason == "end_turn" and image.content, image)

    script(replica, "think pondering deeply")
    with client.messages.stream(model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "think"}]) as stream:
        thought = stream.get_final_message()
    blocks = [b.model_dump() for b in thought.content]
    thinking = [b for b in blocks if b["type"] == "thinking"]
    check("thinking arrives as a signed thinking block", thinking and thinking[0]["signature"], blocks)
    history = [{"role": "user", "content": "think"}, {"role": "assistant", "content": blocks}, {"role": "user", "content": "ping"}]
    replayed = client.messages.create(model=MODEL, max_tokens=64, messages=history)
    check("a thinking block replayed unmodified is accepted", replayed.content[0].text == "pong", replayed)
    tampered = [dict(m) for m in history]
    tampered[1] = {"role": "assistant", "content": [dict(b) for b in blocks]}
    tampered[1]["content"][0]["thinking"] = "something else"
    try:
        client.messages.create(model=MODEL, max_tokens=64, messages=tampered)
        check("a tampered thinking block is a 400", False, "accepted")
    except anthropic.BadRequestError as error:
        check("a tampered thinking block is a 400", "signature" in str(error), error)

    try:
        anthropic.Anthropic(base_url=base, api_key="wrong", max_retries=0).messages.create(
            model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "ping"}]
        )
        check("a wrong key is an AuthenticationError", False, "accepted")
    except anthropic.AuthenticationError:
        check("a wrong key is an AuthenticationError", True)
    try:
        client.messages.create(model="claude-nonexistent", max_tokens=8, messages=[{"role": "user", "content": "ping"}])
        check("an unknown model is a NotFoundError", False, "accepted")
    except anthropic.NotFoundError as error:
        check("an unknown model is a NotFoundError", MODEL in str(error), error)

    ids = [m.id for m in client.models.list(limit=1000)]
    check("models list the claude-cursor- names", MODEL in ids and all(i.startswith("claude") for i in ids), ids[:5])
    return failures


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
