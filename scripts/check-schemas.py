#!/usr/bin/env python3
"""Checks that what runboard writes matches the JSON Schemas in docs/schemas/:
a simulated run (snapshot, state, ledger, events, calls, acceptance reports, trial graphs), a driven batch
(spec, cell records, each cell's result.json, batch outcome; the Inspect AI adapter's result.json), and the console's records (a saved draft, the committed spec, the
active-batch marker, run tags, unit records, the auto event log, cohort presets, the research state). A third party writing to those schemas
writes what runboard reads."""
import glob, json, os, subprocess, sys, tempfile

import jsonschema

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target", "release", "runboard")
schemas = os.path.join(root, "docs", "schemas")
checked, bad = 0, []


def check(schema, path, instance):
    global checked
    checked += 1
    with open(os.path.join(schemas, schema)) as f:
        try:
            jsonschema.validate(instance, json.load(f))
        except jsonschema.ValidationError as e:
            bad.append(f"{path}: {e.message} (schema {schema})")


with tempfile.TemporaryDirectory() as tmp:
    run = os.path.join(tmp, "run")
    subprocess.run([binary, "simulate-run", run, "--rounds", "4", "--step-ms", "0", "--seed", "7"], check=True,
                   stdout=subprocess.DEVNULL)
    check("snapshot.schema.json", "snapshot.json", json.load(open(os.path.join(run, "snapshot.json"))))
    check("state.schema.json", "state.json", json.load(open(os.path.join(run, "state.json"))))
    for name, schema in [("ledger.jsonl", "ledger-line.schema.json"), ("events.jsonl", "event-line.schema.json")]:
        for i, line in enumerate(open(os.path.join(run, name)), 1):
            check(schema, f"{name}:{i}", json.loads(line))
    for f in glob.glob(os.path.join(run, "calls", "*.json")):
        check("call.schema.json", f, json.load(open(f)))
    for sub, schema in [("acceptance", "acceptance-report.schema.json"), ("trial_graph", "trial-graph.schema.json")]:
        files = glob.glob(os.path.join(run, sub, "*.json"))
        if not files:
            bad.append(f"{sub}/: the simulated run wrote none")
        for f in files:
            check(schema, f, json.load(open(f)))

    camp = os.path.join(tmp, "campaign")
    os.makedirs(os.path.join(camp, "specs"))
    # Each cell reports every field of the cell contract's result.json.
    report = {"score": 0.5, "passed": True, "samples": {"passed": 3, "total": 6}, "tokens": 168,
              "input_tokens": 150, "output_tokens": 18, "cost": 0.02, "reason": "none"}
    command = ["sh", "-c", "printf '%s' \"$0\" > {out}/result.json", json.dumps(report)]
    with open(os.path.join(camp, "campaign.toml"), "w") as f:
        f.write('schema_version = 1\nname = "schemas"\n[runner]\ncommand = %s\nparallel = 2\n'
                % json.dumps(command).replace("{", "{{").replace("}", "}}").replace("{{out}}", "{out}"))
    spec = {"schema_version": 1, "label": "s1", "cells": [{"factors": {"task": t, "seed": 1}} for t in "abc"]}
    with open(os.path.join(camp, "specs", "s1.json"), "w") as f:
        json.dump(spec, f)
    subprocess.run([binary, "drive", os.path.join(camp, "specs")], check=True, stdout=subprocess.DEVNULL)
    check("batch-spec.schema.json", "specs/s1.json", spec)
    for runset in glob.glob(os.path.join(camp, "runsets", "*")):
        check("batch-outcome.schema.json", "batch_outcome.json", json.load(open(os.path.join(runset, "batch_outcome.json"))))
        for f in glob.glob(os.path.join(runset, "cells", "*.json")):
            rec = json.load(open(f))
            check("cell-record.schema.json", f, rec)
            if rec.get("samples") != report["samples"]:
                bad.append(f"{f}: the cell's reported samples were not recorded: {rec}")
        for f in glob.glob(os.path.join(runset, "out", "*", "result.json")):
            check("cell-result.schema.json", f, json.load(open(f)))

    # What runboard's Inspect AI adapter reports (with the pinned Inspect that
    # scripts/setup.sh installs, against the example's stand-in model).
    python = os.path.join(root, ".tools", "inspect", "bin", "python")
    standin = subprocess.Popen([sys.executable, os.path.join(root, "examples", "inspect", "standin_model.py"),
                                "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        url = standin.stdout.readline().split()[-1]
        cell = os.path.join(tmp, "inspect-cell")
        os.makedirs(cell)
        subprocess.run([binary, "cell", "inspect", os.path.join(root, "examples", "inspect", "suite.py") + "@reverse",
                        "--model", "openai/standin-hasty", "--base-url", url, "--python", python, "--out", cell],
                       check=True, stdout=subprocess.DEVNULL, timeout=300)
        result = json.load(open(os.path.join(cell, "result.json")))
        check("cell-result.schema.json", "runboard cell inspect: result.json", result)
        if "samples" not in result or "tokens" not in result:
            bad.append(f"runboard cell inspect: result.json lacks samples or tokens: {result}")
    finally:
        standin.kill()
        standin.wait()

    # The console's records: a draft saved, launched through the one launch
    # path (local launcher), then stopped and aborted.
    con = os.path.join(tmp, "console")
    os.makedirs(con)
    with open(os.path.join(con, "campaign.toml"), "w") as f:
        f.write('schema_version = 1\nname = "console"\n[runner]\ncommand = ["sh", "-c", "exit 0"]\n'
                '[[tasks]]\nname = "t"\nphases = ["a", "b"]\n')
    with open(os.path.join(con, "matrix.csv"), "w") as f:
        f.write("condition,task,phase,seed,repetition\nbase,t,a,1,0\nbase,t,b,1,0\nbase,t,a,2,0\n")
    run_cli = lambda *a: subprocess.run([binary, *a, "--root", con], check=True, capture_output=True, text=True).stdout
    saved = json.loads(run_cli("draft", "--label", "d1", "--max-cells", "5", "--save", "--json"))
    draft = json.load(open(os.path.join(con, saved["path"])))
    check("batch-spec.schema.json", saved["path"], draft)
    if len(draft["cells"]) != 2:
        bad.append(f"draft: {len(draft['cells'])} cells, expected 2 (phase b waits for phase a)")
    run_cli("launch", saved["path"])
    import time
    deadline = time.time() + 60
    while time.time() < deadline and json.loads(run_cli("status", "--json"))["state"]["state"] != "idle":
        time.sleep(0.2)
    run_cli("stop")
    check("active-batch.schema.json", "active_batch.json", json.load(open(os.path.join(con, "runsets", "active_batch.json"))))
    check("run-tags.schema.json", "run_tags.json", json.load(open(os.path.join(con, "runsets", "run_tags.json"))))
    for f in glob.glob(os.path.join(con, ".runboard", "units", "*.json")):
        check("unit-record.schema.json", f, json.load(open(f)))
    check("auto-state.schema.json", "auto/state.json", json.load(open(os.path.join(con, "auto", "state.json"))))
    for i, line in enumerate(open(os.path.join(con, "auto", "log.jsonl")), 1):
        check("auto-log-line.schema.json", f"auto/log.jsonl:{i}", json.loads(line))
    for f in glob.glob(os.path.join(con, "specs", "committed", "*.json")):
        check("batch-spec.schema.json", f, json.load(open(f)))
    # The autopilot's records: settings saved, on, one tick that launches,
    # a tick after the batch ended that closes it, then off.
    ap = os.path.join(tmp, "auto")
    os.makedirs(ap)
    with open(os.path.join(ap, "campaign.toml"), "w") as f:
        f.write('schema_version = 1\nname = "auto"\n[runner]\ncommand = ["sh", "-c", "exit 0"]\n'
                '[[tasks]]\nname = "t"\nphases = ["a"]\n[[models]]\nname = "m"\nkind = "local"\n'
                '[[endpoints]]\nname = "e"\nurl = "http://127.0.0.1:9/v1"\nbackend = "vllm"\nmodels = ["m"]\nrequest_preset = "p"\n')
    with open(os.path.join(ap, "matrix.csv"), "w") as f:
        f.write("condition,task,phase,seed,repetition\nbase,t,a,1,0\ntreat,t,a,1,0\n")
    settings = {"models": ["m"], "tasks": ["t"], "wait_minutes": 0, "max_cells": 1, "label_prefix": "ap"}
    check("auto-settings.schema.json", "settings", settings)
    auto_cli = lambda *a, **k: subprocess.run([binary, "auto", *a, "--root", ap], check=True, capture_output=True, text=True, **k).stdout
    auto_cli("settings", "-", input=json.dumps(settings))
    auto_cli("on")
    auto_cli("tick")
    deadline = time.time() + 60
    while time.time() < deadline and json.loads(subprocess.run([binary, "status", "--json", "--root", ap], check=True, capture_output=True, text=True).stdout)["state"]["state"] != "idle":
        time.sleep(0.2)
    auto_cli("tick")
    auto_cli("off")
    st = json.load(open(os.path.join(ap, "auto", "state.json")))
    check("auto-state.schema.json", "auto/state.json (autopilot)", st)
    check("auto-settings.schema.json", "auto/state.json settings", st["settings"])
    events = [json.loads(l) for l in open(os.path.join(ap, "auto", "log.jsonl"))]
    for i, e in enumerate(events, 1):
        check("auto-log-line.schema.json", f"auto/log.jsonl:{i} (autopilot)", e)
    kinds = [e["event"] for e in events]
    for want in ["settings_saved", "auto_on", "batch_launched", "batch_finished", "auto_off"]:
        if want not in kinds:
            bad.append(f"autopilot log: no {want} event in {kinds}")
    # The results' records, written through the console's REST: a cohort
    # preset, a research state linking it, a decision.
    import re, urllib.request
    srv = subprocess.Popen([binary, "serve", "--port", "0", "--root", con, "--data-dir", os.path.join(tmp, "data-con")],
                           stdout=subprocess.PIPE, text=True, env={**os.environ, "RUNBOARD_TOKEN": ""})
    try:
        base = re.search(r"at (http://127\.0\.0\.1:\d+)/", srv.stdout.readline()).group(1)
        # The next line: the address with the console token it made.
        token = re.search(r"\?token=([0-9a-f]+)", srv.stdout.readline()).group(1)
        def post(path, body):
            req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"content-type": "application/json",
                                                  "authorization": f"Bearer {token}"})
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.load(r)
        post("/api/cohorts", {"name": "seed one", "scope": "seed=1", "note": "the first seed"})
        post("/api/research", {"schema_version": 1, "questions": [{"id": "q1", "text": "Does phase b pass?",
              "cohorts": ["seed one"], "hypotheses": [{"id": "h1", "text": "it does", "cohorts": ["seed one"]}]}],
              "decisions": [], "settings": {"alpha": 0.05}})
        post("/api/research/decisions", {"text": "wait for phase b", "question": "q1"})
    finally:
        srv.terminate()  # the PID we started
        srv.wait(timeout=30)
    check("cohort-presets.schema.json", "runsets/cohort_presets.json",
          json.load(open(os.path.join(con, "runsets", "cohort_presets.json"))))
    check("research-state.schema.json", "research/state.json", json.load(open(os.path.join(con, "research", "state.json"))))
    # The demo's campaign.toml (the fullest one runboard writes), as TOML.
    import tomllib
    data = os.path.join(tmp, "data")
    demo = subprocess.Popen([binary, "serve", "--port", "0", "--data-dir", data], stdout=subprocess.PIPE, text=True)
    try:
        demo.stdout.readline()  # its address: the demo is generated by then
        with open(os.path.join(data, "demo", "campaign.toml"), "rb") as f:
            check("campaign.schema.json", "demo campaign.toml", tomllib.load(f))
    finally:
        demo.terminate()  # the PID we started
        demo.wait(timeout=30)

for b in bad:
    print("schema violation:", b)
print(f"{checked} records checked against docs/schemas, {len(bad)} violations")
sys.exit(1 if bad else 0)
