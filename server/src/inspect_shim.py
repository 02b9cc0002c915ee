# runboard's shim around Inspect AI's command line, run by `runboard cell
# inspect` as `python -c <this> eval|eval-retry ...` (embedded in the binary).
#
# 1. SIGTERM (and SIGINT, which a non-interactive shell may have left
#    ignored) raise KeyboardInterrupt: Inspect's way to cancel an eval and
#    save the samples it finished. Without it SIGTERM ends Python at once and
#    the log keeps none.
# 2. While the eval runs, an Inspect hook (inspect_ai.hooks, registered here
#    before Inspect starts) writes the cell's live samples report,
#    RUNBOARD_SAMPLES_FILE: {"finished", "total", "score", "at"} — at each
#    sample's end and every 10 s from Inspect's own event loop, so a report
#    also says the eval loop is alive (a hung loop writes nothing, and the
#    console's stall rule sees it). Hooks, not the realtime sample buffer:
#    they are Inspect's public API for exactly this, need no polling of a
#    database another process writes, and see each sample's score as it ends.
import asyncio
import json
import os
import runpy
import signal
import sys
import time

signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.default_int_handler)

REPORT = os.environ.get("RUNBOARD_SAMPLES_FILE")
# A retry's samples finished by earlier attempts (kept in the log it retries):
# how many, and the sum of their scores.
KEPT = int(os.environ.get("RUNBOARD_INSPECT_KEPT") or 0)
KEPT_SCORED = int(os.environ.get("RUNBOARD_INSPECT_KEPT_SCORED") or 0)
KEPT_SCORE = float(os.environ.get("RUNBOARD_INSPECT_KEPT_SCORE") or 0.0)
BEAT_S = 10.0

if REPORT:
    try:
        from inspect_ai.hooks import Hooks, hooks
        from inspect_ai.scorer import value_to_float

        to_float = value_to_float()

        @hooks(name="runboard_samples", description="runboard: samples finished and the score so far")
        class RunboardSamples(Hooks):
            def __init__(self):
                self.total = None
                self.finished = KEPT
                self.scored = KEPT_SCORED
                self.score_sum = KEPT_SCORE
                self.beat = None

            def write(self):
                score = self.score_sum / self.scored if self.scored else None
                state = {"finished": self.finished, "total": self.total, "score": score, "at": time.time()}
                try:
                    tmp = REPORT + ".tmp"
                    with open(tmp, "w") as f:
                        json.dump(state, f)
                    os.replace(tmp, REPORT)
                except OSError as e:
                    print(f"runboard: the samples report could not be written: {e}", file=sys.stderr)

            async def on_task_start(self, data):
                spec = data.spec
                ids = spec.dataset.sample_ids
                n = len(ids) if ids else (spec.dataset.samples or 0)
                self.total = n * (spec.config.epochs or 1) or None
                self.write()

                async def beat():
                    while True:
                        await asyncio.sleep(BEAT_S)
                        self.write()

                try:
                    self.beat = asyncio.get_running_loop().create_task(beat())
                except RuntimeError:
                    self.beat = None

            async def on_sample_end(self, data):
                self.finished += 1
                scores = data.sample.scores or {}
                if scores:
                    try:
                        self.score_sum += float(to_float(next(iter(scores.values())).value))
                        self.scored += 1
                    except (TypeError, ValueError):
                        pass
                self.write()

            async def on_task_end(self, data):
                if self.beat is not None:
                    self.beat.cancel()
                self.write()

    except Exception as e:  # an Inspect without hooks: the eval runs unreported
        print(f"runboard: no live samples report ({e!r})", file=sys.stderr)

runpy.run_module("inspect_ai", run_name="__main__", alter_sys=True)
