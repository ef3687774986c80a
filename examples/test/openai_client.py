"""The `openai` Python package (from PyPI) against cursor-gateway and the replica.

    python openai_client.py first|second BASE_URL API_KEY TRANSCRIPT

`first`: a streaming tool loop with two tool rounds in one conversation, parallel tool
calls, a non-streaming call, an image, errors (unknown model, wrong key), and a native shell request that reaches
the client's own `bash` tool as a call. The conversation is saved to TRANSCRIPT.
`second` (a new process, after the gateway restarted): continues the saved conversation.
Prints `ok   NAME` / `FAIL NAME: why` lines; the caller counts them.
"""

import base64
import json
import sys

import openai

MODEL = "composer-2.5"
SHOUT = {
    "type": "function",
    "function": {
        "name": "shout",
        "description": "Upper-cases text",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
}
BASH = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command and return its output",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    },
}
# A 1x1 PNG.
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


def stream_leg(client, messages, tools):
    """One streamed request: (text, whole tool calls, finish_reason, usage, partial deltas)."""
    text, calls, finish, usage, partial = "", [], None, None, 0
    stream = client.chat.completions.create(
        model=MODEL,
        messages=messages,
        tools=tools,
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                text += delta.content
            for call in delta.tool_calls or []:
                # Whole calls only: id, name and parseable arguments in the one delta.
                if not (call.id and call.function and call.function.name):
                    partial += 1
                    continue
                try:
                    json.loads(call.function.arguments)
                except (TypeError, ValueError):
                    partial += 1
                    continue
                calls.append(call)
            if choice.finish_reason:
                finish = choice.finish_reason
    return text, calls, finish, usage, partial


def tool_loop(client, messages, tools, run_tool, calls_per_round=None):
    """Runs legs until the model answers; returns (answer, rounds, partial deltas, usage).
    Each round's whole tool calls are appended to `calls_per_round` when it is given."""
    rounds = partial_total = 0
    usage = None
    while True:
        text, calls, finish, usage, partial = stream_leg(client, messages, tools)
        partial_total += partial
        if finish != "tool_calls":
            messages.append({"role": "assistant", "content": text})
            return text, rounds, partial_total, usage
        rounds += 1
        if calls_per_round is not None:
            calls_per_round.append(calls)
        messages.append(
            {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in calls
                ],
            }
        )
        for c in calls:
            result = run_tool(c.function.name, json.loads(c.function.arguments))
            messages.append({"role": "tool", "tool_call_id": c.id, "content": result})


def fake_tools(name, arguments):
    if name == "shout":
        return arguments["text"].upper()
    if name == "bash":
        # The client decides; this test only echoes what an `echo` would print.
        command = arguments["command"]
        return command.split("echo ", 1)[1].strip() if "echo " in command else ""
    return f"no tool {name}"


def first(base_url, key, transcript):
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)

    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "remember OKAPI-9"},
    ]
    answer, rounds, partial, usage = tool_loop(client, messages, [SHOUT], fake_tools)
    check("a first streamed turn answers", "remember" in answer.lower(), answer)
    check("include_usage sends usage", usage is not None and usage.completion_tokens >= 0, usage)

    messages.append({"role": "user", "content": 'tool: shout {"text": "first round"}'})
    answer, rounds_1, partial_1, _ = tool_loop(client, messages, [SHOUT], fake_tools)
    messages.append({"role": "user", "content": 'tool: shout {"text": "second round"}'})
    answer_2, rounds_2, partial_2, _ = tool_loop(client, messages, [SHOUT], fake_tools)
    check(
        "a streaming tool loop runs two rounds",
        rounds_1 == 1 and rounds_2 == 1 and "FIRST ROUND" in answer and "SECOND ROUND" in answer_2,
        f"{rounds_1}/{rounds_2}: {answer!r} {answer_2!r}",
    )
    check("every tool call arrives whole in one delta", partial + partial_1 + partial_2 == 0, "partial deltas")
    with open(transcript, "w") as f:
        json.dump(messages, f)

    reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "ping"}])
    check(
        "a non-streaming call",
        reply.choices[0].message.content == "pong" and reply.choices[0].finish_reason == "stop",
        reply,
    )

    reply = client.chat.completions.create(
        model=MODEL,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "describe this image"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                ],
            }
        ],
    )
    check("an image as a data URL", bool(reply.choices[0].message.content), reply)

    try:
        client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
        check("an unknown model is a 400 error object", False, "no error")
    except openai.BadRequestError as error:
        check(
            "an unknown model is a 400 error object",
            error.status_code == 400 and "[local]" in str(error.message),
            error,
        )
    try:
        openai.OpenAI(base_url=base_url, api_key="wrong", max_retries=0).models.list()
        check("a wrong gateway key is a 401", False, "no error")
    except openai.AuthenticationError as error:
        check("a wrong gateway key is a 401", error.status_code == 401, error)

    models = [m.id for m in client.models.list()]
    check("models lists the catalog", MODEL in models, models)

    parallel = [{"role": "user", "content": 'tool: shout {"text": "left"}\ntool: shout {"text": "right"}'}]
    seen = []
    answer, rounds, partial, _ = tool_loop(client, parallel, [SHOUT], fake_tools, seen)
    texts = [[json.loads(c.function.arguments)["text"] for c in calls] for calls in seen]
    check(
        "parallel tool calls arrive whole in one round and both results are used",
        texts == [["left", "right"]]
        and len({c.id for c in seen[0]}) == 2
        and partial == 0
        and "LEFT" in answer
        and "RIGHT" in answer,
        f"{texts} {partial}: {answer!r}",
    )

    native = [{"role": "user", "content": "run: echo native-gateway"}]
    answer, rounds, _, _ = tool_loop(client, native, [BASH], fake_tools)
    check(
        "Cursor's native shell request became a call of the client's bash tool",
        rounds == 1 and "native-gateway" in answer,
        f"{rounds}: {answer!r}",
    )


def second(base_url, key, transcript):
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)
    with open(transcript) as f:
        messages = json.load(f)
    messages.append({"role": "user", "content": "what did I ask you to remember?"})
    answer, _, _, _ = tool_loop(client, messages, [SHOUT], fake_tools)
    check("a second process continues the conversation", "OKAPI-9" in answer, answer)


if __name__ == "__main__":
    phase, base_url, key, transcript = sys.argv[1:5]
    try:
        {"first": first, "second": second}[phase](base_url, key, transcript)
    except Exception as error:  # an unexpected failure is one failed check, with its cause
        check(f"{phase} ran to the end", False, repr(error))
    sys.exit(1 if failures else 0)
