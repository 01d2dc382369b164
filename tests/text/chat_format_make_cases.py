#!/usr/bin/env python3
"""Regenerates chat_format_cases.jsonl: conversations rendered by the official Qwen3.5 chat template
with Python Jinja2, set up as transformers' apply_chat_template does (sandboxed environment,
trim_blocks, lstrip_blocks, loopcontrols, tojson = json.dumps(ensure_ascii=False),
raise_exception -> TemplateError). These are the oracle for src/text/chat_format.cpp.

    python3 tests/text/chat_format_make_cases.py            # needs jinja2 (3.1.x)
    python3 tests/text/chat_format_make_cases.py --seed 7 --count 5000 --out /tmp/fuzz.jsonl  # more, not checked in

Each line: {"id", "name", "messages", "kwargs", "rendered" | null, "error"?}, the format of
tests/data/tokenizer/golden/*_chat.jsonl. kwargs.add_generation_prompt is false when absent.
Tool-call arguments given as JSON strings (OpenAI style) are json.loads'ed before rendering, as a
server does; the stored messages keep the strings. An empty or null arguments value becomes {}
(vLLM's rule).
"""
import argparse
import copy
import json
import os
import random

from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "..", "data", "tokenizer", "qwen3.5", "chat_template.jinja")
OUT = os.path.join(HERE, "chat_format_cases.jsonl")


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
with open(TEMPLATE, encoding="utf-8") as f:
    template = env.from_string(f.read())


def server_normalize(messages):
    """What a server does before templating: OpenAI JSON-string arguments become mappings."""
    messages = copy.deepcopy(messages)
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("tool_calls"), list):
            continue
        for call in m["tool_calls"]:
            target = call.get("function", call) if isinstance(call, dict) else None
            if not isinstance(target, dict) or "arguments" not in target:
                continue
            args = target["arguments"]
            if args is None or args == "":
                target["arguments"] = {}
            elif isinstance(args, str):
                target["arguments"] = json.loads(args)
    return messages


def render(messages, kwargs):
    kw = dict(kwargs)
    tools = kw.pop("tools", None)
    agp = kw.pop("add_generation_prompt", False)
    try:
        text = template.render(messages=server_normalize(messages), tools=tools, documents=None,
                               add_generation_prompt=agp, bos_token=None, eos_token="<|im_end|>",
                               pad_token="<|endoftext|>", unk_token=None, **kw)
        return text, None
    except TemplateError as e:
        return None, str(e)


# ---------------------------------------------------------------------------------------------
# Building blocks

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                           "unit": {"type": "string", "enum": ["c", "f"]}},
                          "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the corpus. Scores are in [0.0, 1.0]; default threshold 1e-05.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "description": "Text to find — any language, e.g. «café»"},
        "top_k": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
        "threshold": {"type": "number", "default": 0.5, "minimum": 0.0, "maximum": 1e16},
        "exact": {"type": "boolean", "default": False},
        "filters": {"type": "object", "properties": {"lang": {"type": ["string", "null"], "default": None},
                                                     "tags": {"type": "array", "items": {"type": "string"}}}}},
        "required": ["query"]}}}
RUN_CODE = {"type": "function", "function": {"name": "run_python", "description": "Run code.\nReturns \"stdout\".",
            "parameters": {"type": "object", "properties": {"code": {"type": "string"},
                                                            "timeout_s": {"type": "number", "default": 2.5}},
                           "required": ["code"]}}}
FLAT_TOOL = {"name": "lookup", "description": "A tool given without the {type, function} wrapper.",
             "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}}}

TRICKY_FLOATS = [0.1, 0.5, 1.5, 2.0, 100.0, 1e-05, 0.0001, 1e16, 1e15, 123456789012345.6, 1e22, -0.0, 0.0,
                 3.141592653589793, 0.30000000000000004, 2.5e-08, 1.7976931348623157e308, 5e-324, -7.25,
                 1234567890123456789.0, 0.001, 9.999999999999999e-05]
WORDS = ["alpha", "Ünïcödé", "東京", "naïve café", "emoji 🚀", "tab\there", "line1\nline2", "quote \" and '",
         "back\\slash", "<tag>", "spaces  inside", "مرحبا", "x", "", "ℵ", "z\u200bw"]
EDGE_SPACE = ["", " ", "\n", "\n\n", "\t", " \u3000", "\u00a0", "\u2028", "\x1c", "\x85", "\v\f", "\u200b", "\r\n"]


def rnd_text(r, words=3):
    return " ".join(r.choice(WORDS[:13]) for _ in range(r.randint(1, words)))


def padded(r, text):
    return r.choice(EDGE_SPACE) + text + r.choice(EDGE_SPACE)


def rnd_scalar(r):
    kind = r.randrange(7)
    if kind == 0:
        return r.choice(TRICKY_FLOATS)
    if kind == 1:
        return r.choice([True, False, None])
    if kind == 2:
        return r.randint(-10**12, 10**12)
    if kind == 3:
        return r.uniform(-1, 1) * 10 ** r.randint(-8, 20)
    return rnd_text(r)


def rnd_value(r, depth=0):
    kind = r.randrange(10)
    if depth < 2 and kind == 0:
        return {r.choice(["a", "b", "key", "名前", "nested"]) + str(i): rnd_value(r, depth + 1) for i in range(r.randint(0, 3))}
    if depth < 2 and kind == 1:
        return [rnd_value(r, depth + 1) for _ in range(r.randint(0, 3))]
    if kind == 2:
        return "multi\nline\n  value " + rnd_text(r)
    return rnd_scalar(r)


def rnd_parts(r, allow_media=True):
    parts = []
    for _ in range(r.randint(1, 4)):
        k = r.randrange(6) if allow_media else 0
        if k <= 2:
            parts.append({"type": "text", "text": rnd_text(r)})
        elif k == 3:
            parts.append(r.choice([{"type": "image", "image": "file:///a.png"},
                                   {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                   {"type": "image"}, {"image": "b.jpg"}]))
        elif k == 4:
            parts.append(r.choice([{"type": "video", "video": "file:///v.mp4"}, {"type": "video"}, {"video": ["f1.jpg", "f2.jpg"]}]))
        else:
            parts.append({"type": "text", "text": padded(r, rnd_text(r))})
    return parts


def rnd_content(r, allow_media=True):
    k = r.randrange(8)
    if k == 0 and allow_media:
        return rnd_parts(r)
    if k == 1:
        return None
    return padded(r, rnd_text(r, 5))


def rnd_tool_call(r):
    name = r.choice(["get_weather", "search", "run_python", "lookup"])
    args = {r.choice(["city", "query", "code", "top_k", "threshold", "exact", "filters", "q"]) + str(i): rnd_value(r)
            for i in range(r.randint(0, 4))}
    form = r.randrange(5)
    if form == 0:
        args = json.dumps(args)  # OpenAI style, ASCII-escaped
    elif form == 1:
        args = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    if r.random() < 0.5:
        call = {"type": "function", "function": {"name": name, "arguments": args}}
        if r.random() < 0.3:
            call = {"id": "call_%d" % r.randint(0, 999), **call}
    else:
        call = {"name": name, "arguments": args}
    if r.random() < 0.05:
        del (call["function"] if "function" in call else call)["arguments"]
    return call


def rnd_assistant(r):
    m = {"role": "assistant"}
    content = padded(r, rnd_text(r, 4))
    style = r.randrange(9)
    if style == 0:
        content = "<think>\n" + rnd_text(r) + "\n</think>\n\n" + content
    elif style == 1:
        content = padded(r, "<think>" + padded(r, rnd_text(r)) + "</think>" + r.choice(["", "\n", "\n\n  ", " "]) + content)
    elif style == 2:
        content = rnd_text(r) + "</think>" + content  # closing tag only
    elif style == 3:
        content = "<think>a</think>mid<think>b</think>\n" + content  # several blocks
    elif style == 4:
        content = r.choice(["", "   ", None, "\n\n"])
    m["content"] = content
    rc = r.randrange(5)
    if rc == 0:
        m["reasoning_content"] = padded(r, rnd_text(r))
    elif rc == 1:
        m["reasoning_content"] = None
    elif rc == 2:
        m["reasoning_content"] = ""
    if r.random() < 0.4:
        m["tool_calls"] = [rnd_tool_call(r) for _ in range(r.randint(1, 3))]
    elif r.random() < 0.1:
        m["tool_calls"] = r.choice([[], None])
    return m


def rnd_conversation(r):
    msgs = []
    if r.random() < 0.5:
        msgs.append({"role": "system", "content": r.choice([padded(r, rnd_text(r)), rnd_parts(r, allow_media=False), "", None])})
    for _ in range(r.randint(1, 4)):
        k = r.randrange(10)
        if k == 0:
            msgs.append({"role": "user", "content": "<tool_response>\n" + rnd_text(r) + "\n</tool_response>"})
        else:
            msgs.append({"role": "user", "content": rnd_content(r)})
        if r.random() < 0.8:
            msgs.append(rnd_assistant(r))
            if "tool_calls" in msgs[-1] and r.random() < 0.8:
                for _ in range(r.randint(1, 3)):
                    msgs.append({"role": "tool", "content": r.choice([rnd_content(r, allow_media=r.random() < 0.2), json.dumps({"t": rnd_scalar(r)})])})
                if r.random() < 0.6:
                    msgs.append(rnd_assistant(r))
    kwargs = {}
    if r.random() < 0.2:
        kwargs["tools"] = r.sample([WEATHER, SEARCH, RUN_CODE, FLAT_TOOL], r.randint(1, 3))
    if r.random() < 0.7:
        kwargs["add_generation_prompt"] = r.random() < 0.8
    if r.random() < 0.5:
        kwargs["enable_thinking"] = r.random() < 0.5
    if r.random() < 0.3:
        kwargs["add_vision_id"] = True
    return msgs, kwargs


# ---------------------------------------------------------------------------------------------
# Curated cases: one feature each, the shapes a held-out set is likely to use.

def curated():
    U = lambda c: {"role": "user", "content": c}
    A = lambda c, **kw: {"role": "assistant", "content": c, **kw}
    T = lambda c: {"role": "tool", "content": c}
    S = lambda c: {"role": "system", "content": c}
    call = lambda name, args: {"type": "function", "function": {"name": name, "arguments": args}}
    gp = {"add_generation_prompt": True}
    yield "several_params_nested_dict", [U("Find docs"), A("", tool_calls=[call("search", {
        "query": "gpu kernels", "top_k": 5, "threshold": 0.25, "exact": False,
        "filters": {"lang": "ja", "tags": ["cuda", "hip"], "since": None}})])], {"tools": [SEARCH], **gp}
    yield "null_bool_float_args", [U("go"), A("Calling.", tool_calls=[call("search", {
        "a": None, "b": True, "c": False, "d": 2.0, "e": 1e-05, "f": 1e16, "g": 0.1, "h": 100.0, "i": -0.0,
        "j": 12345678901234567890.0, "k": [1.0, None, True, "s"], "l": {}, "m": [], "n": ""})])], {"tools": [SEARCH]}
    yield "openai_string_arguments", [U("weather?"), A(None, tool_calls=[
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Z\\u00fcrich\", \"unit\": \"c\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"東京\",\"days\":3,\"x\":1.50}"}}]),
        T("8C"), T("20C")], {"tools": [WEATHER], **gp}
    yield "flat_tool_calls", [U("look it up"), A("ok", tool_calls=[{"name": "lookup", "arguments": {"id": 7}},
                                                                    {"name": "lookup", "arguments": "{}"}])], {"tools": [FLAT_TOOL]}
    yield "reasoning_field_after_query", [U("q"), A("answer", reasoning_content="  \nthinking hard\n\n")], gp
    yield "reasoning_in_content_after_query", [U("q"), A("<think>\nstep 1\nstep 2\n</think>\n\n\n  answer")], {}
    yield "reasoning_field_wins_over_content", [U("q"), A("<think>inner</think>visible", reasoning_content="field")], {}
    yield "reasoning_dropped_before_last_query", [S("sys"), U("q1"), A("a1", reasoning_content="r1"), U("q2"),
                                                  A("<think>r2</think>a2"), U("q3")], gp
    yield "consecutive_tools_multistep", [U("plan a trip"), A("", reasoning_content="need two lookups",
        tool_calls=[call("get_weather", {"city": "Rome"}), call("get_weather", {"city": "Oslo"})]),
        T("sunny"), T([{"type": "text", "text": "rain"}]), T("{\"extra\": true}"),
        A("<think>compare</think>Rome.", tool_calls=[call("get_weather", {"city": "Rome", "unit": "c"})]), T("25")], gp
    yield "tool_response_wrapped_user", [U("start"), A("", tool_calls=[call("get_weather", {"city": "A"})]),
        U("<tool_response>\n12C\n</tool_response>"), A("It is 12C.", reasoning_content="read it")], gp
    yield "multi_image_vision_id", [U([{"type": "image"}, {"type": "text", "text": "and"}, {"type": "image_url", "image_url": {"url": "u"}}]),
        A("two images"), U([{"type": "video", "video": "v"}, {"image": "x"}, {"type": "text", "text": " which? "}]),
    ], {"add_vision_id": True, **gp}
    yield "multi_image_no_vision_id", [U([{"type": "image"}, {"type": "image"}, {"type": "text", "text": "diff?"}])], {**gp, "enable_thinking": False}
    yield "system_parts_with_tools", [S([{"type": "text", "text": "  Be "}, {"type": "text", "text": "nice.  "}]), U("hi")], {"tools": [WEATHER, RUN_CODE], **gp}
    yield "empty_system_with_tools", [S("  "), U("hi")], {"tools": [WEATHER], **gp}
    yield "empty_system_no_tools", [S(""), U("hi")], gp
    yield "unicode_whitespace_trim", [U("\u3000\u00a0 hello \u2028\x1c"), A("\x85 hi \u200b")], gp
    yield "assistant_prefill_last", [U("count"), A("1, 2,")], {}
    yield "tool_first_message", [T("orphan"), U("hi")], gp
    yield "tool_last_message", [U("hi"), A("", tool_calls=[call("get_weather", {"city": "B"})]), T("x")], {}
    yield "content_then_calls_spacing", [U("hi"), A("  Let me check.  ", tool_calls=[call("run_python", {"code": "print(1)\nprint(2)"})])], {}
    yield "thinking_false_history", [U("a"), A("<think>x</think>b"), U("c")], {**gp, "enable_thinking": False}
    yield "error_no_user_query", [S("s"), A("hello")], gp
    yield "error_only_tool_response_users", [U("<tool_response>r</tool_response>"), A("ok")], gp
    yield "error_system_image", [S([{"type": "image"}]), U("hi")], gp
    yield "error_system_video", [S([{"type": "video"}]), U("hi")], {"tools": [WEATHER]}
    yield "error_system_late", [U("hi"), A("yo"), S("late")], gp
    yield "error_unexpected_role", [U("hi"), {"role": "developer", "content": "x"}], gp
    yield "error_unexpected_item", [U([{"type": "audio", "audio": "a.wav"}])], gp
    yield "error_unexpected_content", [U({"text": "a dict"})], gp
    yield "error_empty_messages", [], gp
    yield "error_image_in_late_system", [U("hi"), S([{"type": "image"}])], gp
    # Python/Jinja2 corners the template inherits: `in` on string and list parts, str() of
    # non-string text, mappings where lists are expected, a string where a list is expected.
    yield "odd_string_and_list_parts", [U(["some text", "an image", "a video", ["image"], ["text", 1]])], {"add_vision_id": True, **gp}
    yield "odd_text_values_python_str", [U([{"type": "text", "text": {"k": [1, "it's", None, 2.0], "q\"": "\u00a0\u200b🚀\t"}},
                                            {"text": 2.5}, {"text": None}, {"text": True}, {"text": [1e16, "x"]}])], gp
    yield "odd_part_with_image_key_and_text", [U([{"type": "text", "text": "hidden", "image": None}, {"type": "text", "text": "shown"}])], gp
    yield "odd_tools_mapping_ignored", [U("hi")], {"tools": {"name": "f"}, **gp}
    yield "odd_tools_string_iterated", [U("hi")], {"tools": "ab\u00e9", **gp}
    yield "odd_tools_empty_list", [S("s"), U("hi")], {"tools": [], **gp}
    yield "odd_tool_calls_mapping_ignored", [U("hi"), A("x", tool_calls={"name": "f", "arguments": {}})], {}
    yield "odd_reasoning_not_string", [U("hi"), A("<think>r</think>c", reasoning_content=5)], {}
    yield "odd_tool_call_extra_keys", [U("hi"), A("", tool_calls=[{"id": "c1", "type": "function", "index": 0,
        "function": {"name": "f", "arguments": {"z": 1, "a": 2}, "extra": True}}])], {}
    yield "odd_non_string_tool_content", [U("hi"), A("", tool_calls=[call("f", {})]), T(None), T([{"type": "text", "text": " a "}, {"type": "image"}])], {"add_vision_id": True}
    yield "odd_float_tool_definitions", [U("hi")], {"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "x": 1e-07, "y": 1.0, "z": 123456789.123, "w": -1e+300, "v": 0.1, "u": [1, 1.0, True, None]}}}]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--out", default=OUT)
    opt = ap.parse_args()
    rows = list(curated())
    r = random.Random(opt.seed)
    for i in range(opt.count):
        messages, kwargs = rnd_conversation(r)
        rows.append(("random_%03d" % i, messages, kwargs))
    with open(opt.out, "w", encoding="utf-8") as f:
        for i, (name, messages, kwargs) in enumerate(rows):
            rendered, error = render(messages, kwargs)
            row = {"id": "cf-%03d" % (i + 1), "name": name, "messages": messages, "kwargs": kwargs, "rendered": rendered}
            if error is not None:
                row["error"] = error
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print("wrote", len(rows), "cases to", opt.out)


if __name__ == "__main__":
    main()
