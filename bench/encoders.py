"""Encoding cost of one run's frames: our SSE envelope vs the AI SDK UI message stream vs AG-UI.

The same synthetic run (D text deltas, a read tool started + executed, a component, then the end) is
encoded by each protocol's encoder, in interleaved rounds so machine load hits all three alike. Pure CPU,
no network: it tells what the protocol layer adds per frame, not end-to-end latency (see bench/sse.py).

    .venv/bin/python bench/encoders.py [--deltas 2000] [--rounds 5]

Prints µs per frame (median [min–max] over rounds) and each encoder's ratio to the native SSE envelope.
"""

from __future__ import annotations

import argparse
import statistics
import time

from agora_agent.streaming.agui import AGUIEncoder
from agora_agent.streaming.encoding import RunSummary
from agora_agent.streaming.frames import ComponentFrame, Frame, StreamEvent, TextFrame, ToolFrame
from agora_agent.streaming.ui_message_stream import UIMessageStreamEncoder
from agora_agent.web.sse import encode_event, encode_meta


def run_events(deltas: int) -> list[StreamEvent]:
    frames: list[Frame] = [TextFrame(delta=f"word{i} ") for i in range(deltas // 2)]
    frames.append(ToolFrame(tool_call_id="c1", name="lookup_order", kind="read", status="started", input={"id": 7}))
    frames.append(ComponentFrame(name="table", data={"rows": [[1, 2], [3, 4]]}))
    frames.append(ToolFrame(tool_call_id="c1", name="lookup_order", kind="read", status="executed", output={"ok": 1}))
    frames.extend(TextFrame(delta=f"more{i} ") for i in range(deltas - deltas // 2))
    return [StreamEvent(i + 1, f) for i, f in enumerate(frames)]


SUMMARY = RunSummary(run_id="r1", thread_id="t1", status="completed", input_tokens=10, output_tokens=20, cost_usd=0.01)


def native(events: list[StreamEvent]) -> int:
    out = [encode_meta("r1", "t1"), *(encode_event(e) for e in events), b"event: done\ndata: {}\n\n"]
    return sum(map(len, out))


def ai_sdk(events: list[StreamEvent]) -> int:
    encoder = UIMessageStreamEncoder(run_id="r1", thread_id="t1")
    out = [*encoder.start()]
    for e in events:
        out += encoder.event(e)
    out += encoder.finish(SUMMARY)
    return sum(map(len, out))


def agui(events: list[StreamEvent]) -> int:
    encoder = AGUIEncoder(thread_id="t1", run_id="r1", agora_run_id="r1", agora_thread_id="t1")
    out = [*encoder.start()]
    for e in events:
        out += encoder.event(e)
    out += encoder.finish(SUMMARY)
    return sum(map(len, out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    events = run_events(args.deltas)
    encoders = {"native SSE": native, "AI SDK v1": ai_sdk, "AG-UI": agui}
    per_frame: dict[str, list[float]] = {name: [] for name in encoders}
    sizes: dict[str, int] = {}
    for _ in range(args.rounds):
        for name, encode in encoders.items():
            started = time.perf_counter()
            sizes[name] = encode(events)
            per_frame[name].append((time.perf_counter() - started) / len(events) * 1e6)
    base = statistics.median(per_frame["native SSE"])
    print(f"{len(events)} frames, {args.rounds} interleaved rounds")
    print(f"{'encoder':<12} {'µs/frame median [min–max]':<28} {'× native':>8} {'bytes':>9}")
    for name, values in per_frame.items():
        med = statistics.median(values)
        span = f"{med:.2f} [{min(values):.2f}–{max(values):.2f}]"
        print(f"{name:<12} {span:<28} {med / base:>8.2f} {sizes[name]:>9}")


if __name__ == "__main__":
    main()
