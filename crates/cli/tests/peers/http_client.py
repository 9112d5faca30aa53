"""A test client for `calltape http`: the official OpenAI and Anthropic SDKs, pointed at the proxy
through OPENAI_BASE_URL and ANTHROPIC_BASE_URL, write what they parsed as JSON to the given file.

Usage: python http_client.py OUT.json [scenario]   (scenario: all (default), basic or miss)
"""

import hashlib
import json
import os
import sys

import httpx
import openai


def run_all():
    # Imported here: its types take seconds to load, and the miss scenario does not use it.
    import anthropic

    oa = openai.OpenAI()
    an = anthropic.Anthropic()
    out = {}

    chat = oa.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    out["chat"] = {"content": chat.choices[0].message.content, "usage": chat.usage.total_tokens}

    stream = oa.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "stream please"}], stream=True)
    out["chat_stream"] = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    events = oa.responses.create(model="gpt-4o-mini", input="hello", stream=True)
    kinds, final = [], None
    for ev in events:
        kinds.append(ev.type)
        if ev.type == "response.completed":
            final = ev.response.output_text
    out["responses"] = {"types": kinds, "text": final}

    with an.messages.stream(model="claude-test-model", max_tokens=20,
                            messages=[{"role": "user", "content": "hey"}]) as s:
        text = "".join(s.text_stream)
        msg = s.get_final_message()
    out["anthropic"] = {"text": text, "stop": msg.stop_reason}

    try:
        for _ in an.messages.create(model="claude-test-model", max_tokens=20, stream=True,
                                    messages=[{"role": "user", "content": "overload"}]):
            pass
        out["anthropic_error"] = None
    except anthropic.APIStatusError as e:
        out["anthropic_error"] = {"class": type(e).__name__, "message": str(e.message)}

    audio = oa.audio.speech.create(model="tts-1", voice="alloy", input="hello")
    data = audio.read()
    out["audio"] = {"sha256": hashlib.sha256(data).hexdigest(), "len": len(data)}

    out["models"] = [m.id for m in oa.models.list()]

    # The raw bytes of a stream, as a client parser sees them.
    base = os.environ["OPENAI_BASE_URL"]
    with httpx.stream("POST", base + "/chat/completions",
                      headers={"authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
                      json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "stream please"}],
                            "stream": True}) as r:
        raw = b"".join(r.iter_raw())
    out["raw_stream_sha256"] = hashlib.sha256(raw).hexdigest()
    return out


def run_basic():
    import anthropic

    out = {}
    chat = openai.OpenAI().chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    out["chat"] = chat.choices[0].message.content
    msg = anthropic.Anthropic().messages.create(model="claude-test-model", max_tokens=20, stream=True,
                                                messages=[{"role": "user", "content": "hey"}])
    out["anthropic"] = "".join(ev.delta.text for ev in msg if ev.type == "content_block_delta")
    return out


def run_miss():
    # An application that swallows its errors (a fallback answer, a "try again" message) and exits 0.
    oa = openai.OpenAI(max_retries=3)
    out = {}
    try:
        oa.chat.completions.create(model="gpt-4o-mini",
                                   messages=[{"role": "user", "content": "a question never recorded"}])
        out["error"] = None
    except openai.APIStatusError as e:
        out["error"] = {"class": type(e).__name__, "status": e.status_code, "message": str(e.message)}
    if os.environ.get("ANTHROPIC_BASE_URL"):
        import anthropic

        try:
            an = anthropic.Anthropic(max_retries=3)
            an.messages.create(model="claude-test-model", max_tokens=20,
                               messages=[{"role": "user", "content": "never recorded either"}])
            out["anthropic_error"] = None
        except anthropic.APIStatusError as e:
            out["anthropic_error"] = {"class": type(e).__name__, "status": e.status_code}
    return out


def main():
    out_path = sys.argv[1]
    scenario = sys.argv[2] if len(sys.argv) > 2 else "all"
    result = {"all": run_all, "basic": run_basic, "miss": run_miss}[scenario]()
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
