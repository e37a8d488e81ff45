#!/usr/bin/env python3
"""Replays the model calls recorded on codeloop tapes against llama-servers
and prints what each call cost: the same prompts, the same reply length,
temperature 0, one request at a time. Give it a server started with n-gram
speculation and one started alike without, and compare the decode speeds
(tokens/s) call by call.

    scripts/spec_ab.py --url plain=http://127.0.0.1:8733 --url spec=http://127.0.0.1:8732 TAPE... > ab.jsonl
    scripts/spec_ab.py --summary ab.jsonl

Each call goes to every server in turn (the order alternating from one
call to the next), so a load on the machine falls on both alike.

Only the calls whose purpose is given are sent (default: code, and reflect,
which is what a repair is on the tape); each is asked for exactly as many
tokens as the recorded reply spent (its usage), so both servers write the
same amount.
"""
import argparse
import json
import time
import urllib.request


def calls(paths, purposes):
    for path in paths:
        requests, replies = {}, {}
        with open(path) as f:
            for line in f:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                kind = event.get("type")
                if kind == "model_request":
                    requests[event["call_id"]] = event
                elif kind == "model_reply":
                    replies[event["call_id"]] = event
        for call_id, request in sorted(requests.items()):
            name = (request.get("purpose") or {}).get("kind", "?")
            if name.lower() not in purposes:
                continue
            reply = replies.get(call_id)
            if not reply or not reply.get("usage"):
                continue
            n = reply["usage"].get("completion_tokens") or 0
            if n < 16:
                continue
            yield path, call_id, name.lower(), request["messages"], n


def send(url, messages, n):
    body = json.dumps({
        "messages": messages, "max_tokens": n, "temperature": 0,
        "stream": False, "cache_prompt": False,
    }).encode()
    req = urllib.request.Request(url.rstrip("/") + "/v1/chat/completions", body,
                                 {"Content-Type": "application/json"})
    start = time.monotonic()
    with urllib.request.urlopen(req, timeout=900) as r:
        reply = json.load(r)
    wall = time.monotonic() - start
    return reply, wall


def summary(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            rows += [json.loads(l) for l in f if l.strip()]
    labels = sorted({r["label"] for r in rows})
    by = {(r["label"], r["tape"], r["call"]): r for r in rows}
    keys = sorted({(r["tape"], r["call"]) for r in rows
                   if all((l, r["tape"], r["call"]) in by for l in labels)})
    print(f"{len(keys)} calls sent to each of: {', '.join(labels)}")
    if len(labels) == 2:
        same = sum(by[(labels[0], *k)]["text"] == by[(labels[1], *k)]["text"] for k in keys)
        print(f"replies word for word the same on both: {same} of {len(keys)}")
    for label in labels:
        sel = [by[(label, *k)] for k in keys]
        for purpose in sorted({r["purpose"] for r in sel}) + ["all"]:
            part = [r for r in sel if purpose in ("all", r["purpose"])]
            tokens = sum(r["predicted_n"] for r in part)
            secs = sum(r["predicted_ms"] for r in part) / 1000
            drafted = sum(r.get("draft_n") or 0 for r in part)
            accepted = sum(r.get("draft_n_accepted") or 0 for r in part)
            wall = sum(r["wall_s"] for r in part)
            acc = f", {accepted}/{drafted} drafted tokens accepted" if drafted else ""
            print(f"{label:6} {purpose:7} {len(part):3} calls, {tokens:6} tokens in {secs:7.1f} s of decoding"
                  f" = {tokens / secs:5.1f} tokens/s; wall {wall:7.1f} s{acc}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", action="append", default=[], help="LABEL=URL, given once a server")
    p.add_argument("--purpose", default="code,reflect", help="the tape's purpose kinds to send (a repair is \"reflect\")")
    p.add_argument("--summary", action="store_true")
    p.add_argument("paths", nargs="+")
    a = p.parse_args()
    if a.summary:
        summary(a.paths)
        return
    purposes = set(a.purpose.split(","))
    servers = [u.split("=", 1) for u in a.url]
    for i, (path, call_id, purpose, messages, n) in enumerate(calls(a.paths, purposes)):
        order = servers if i % 2 == 0 else servers[::-1]
        for label, url in order:
            reply, wall = send(url, messages, n)
            t = reply.get("timings", {})
            row = {"label": label, "tape": path, "call": call_id, "purpose": purpose,
                   "asked": n, "predicted_n": t.get("predicted_n"), "predicted_ms": t.get("predicted_ms"),
                   "prompt_n": t.get("prompt_n"), "prompt_ms": t.get("prompt_ms"),
                   "draft_n": t.get("draft_n"), "draft_n_accepted": t.get("draft_n_accepted"),
                   "text": reply["choices"][0]["message"]["content"],
                   "wall_s": round(wall, 3)}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
