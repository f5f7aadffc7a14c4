"""Instructions per governed run on the in-memory store, counted by callgrind: a figure load does not move.

Wall-time ratios on a shared 2-core VM move ±30% from round to round; the instruction count of the same run moves
well under 1%, so it is what tells whether a change to the loop made it cheaper. Runs `bench/loop.py`'s memory-store
case (K tool steps then a final text step, budgets on) N1 and N2 times, each in its own `valgrind --tool=callgrind`
process with `PYTHONHASHSEED=0`, and prints (instructions(N2) − instructions(N1)) ÷ (N2 − N1): start-up, imports and
warm-up cancel out. Needs valgrind (`apt-get install valgrind`); about a minute per case.

    .venv/bin/python bench/instructions.py [--steps 6] [--tool async|sync|inline] [--runs 20,120] [--pai]

`--pai` counts Pydantic AI's loop on the same script too (slower under callgrind) and prints the ratio.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = """
import asyncio, sys
sys.path.insert(0, {here!r})
from loop import Ours, PydanticAI

async def main() -> None:
    steps, tool, runs, pai = {steps}, {tool!r}, {runs}, {pai}
    if pai:
        agent = PydanticAI(steps, tool != "async")
        for _ in range(runs):
            await agent.run()
        return
    ours = Ours(None, steps, tool != "async", inline=tool == "inline")
    await ours.start()
    for _ in range(runs):
        await ours.run()
    await ours.close()

asyncio.run(main())
"""


def count(steps: int, tool: str, runs: int, pai: bool) -> int:
    """Instructions of one process that makes `runs` runs (callgrind's total, start-up included)."""
    code = _CHILD.format(here=str(HERE), steps=steps, tool=tool, runs=runs, pai=pai)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "child.py"
        script.write_text(code)
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, str(script)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return int(found.group(1))


def per_run(steps: int, tool: str, low: int, high: int, pai: bool) -> float:
    return (count(steps, tool, high, pai) - count(steps, tool, low, pai)) / (high - low)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6, help="tool-calling steps per run (plus one final step)")
    parser.add_argument("--tool", choices=("async", "sync", "inline"), default="async")
    parser.add_argument("--runs", default="20,120", help="the two run counts whose difference is measured")
    parser.add_argument("--pai", action="store_true", help="also count Pydantic AI on the same script")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    low, high = (int(n) for n in args.runs.split(","))
    if not 0 <= low < high:
        raise SystemExit("--runs takes two counts, the first smaller: e.g. 20,120")
    model_steps = args.steps + 1
    ours = per_run(args.steps, args.tool, low, high, pai=False)
    print(
        f"ours, memory store, {args.tool} tool: {ours:,.0f} instructions per run, {ours / model_steps:,.0f} per model "
        f"step ({args.steps} tool steps + 1)"
    )
    if args.pai:
        # Pydantic AI is ~20x dearer per run: fewer runs give the same precision
        theirs = per_run(args.steps, args.tool, max(low // 4, 1), max(high // 4, 2), pai=True)
        print(f"Pydantic AI Agent+FunctionModel: {theirs:,.0f} per run, {theirs / model_steps:,.0f} per model step")
        print(f"ours ÷ Pydantic AI in instructions: {ours / theirs:.3f}×")


if __name__ == "__main__":
    main()
