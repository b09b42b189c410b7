"""Apply small deliberate bugs one at a time and report which ones the test suite fails to notice.

Each mutant names a file, a code pattern and the tests that must catch it. The script copies
the source tree to a temporary folder (the working tree is never touched), applies one mutant
there, runs its tests against the copy and restores the file. A mutant whose pattern is not in
the code any more is reported as ``pattern not found`` (retarget it after a refactor) instead
of failing the run.

    python scripts/mutants.py                 # every mutant
    python scripts/mutants.py --only theta-relational --only marker-last
    python scripts/mutants.py --list

Prints one line per mutant (killed / SURVIVED / pattern not found / no tests / baseline fails:
a kill is confirmed by running the same tests unmutated) and ends with one JSON line; exits 1 when a mutant survived, 2 when a pattern was not found (and none survived).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "runs", "data", "test-artifacts", "__pycache__", "*.egg-info", ".pytest_cache", "node_modules"
)

Mutate = Callable[[str], "str | None"]  # the mutated source, or None when the pattern is absent


def sub_once(pattern: str, repl: str, flags: int = 0) -> Mutate:
    """Replace every match of ``pattern``; None when there is none."""

    def mutate(src: str) -> str | None:
        out, n = re.subn(pattern, repl, src, flags=flags)
        return out if n else None

    return mutate


def swap_dict_values(dict_name: str, key_a: str, key_b: str) -> Mutate:
    """Swap the values of two keys inside the literal ``dict_name = {...}``."""

    def mutate(src: str) -> str | None:
        m = re.search(rf"{re.escape(dict_name)}[^=\n]*=\s*\{{(.*?)\}}", src, flags=re.S)
        if not m:
            return None
        body = m.group(1)
        va = re.search(rf"([\"']){re.escape(key_a)}\1\s*:\s*([^,\n}}]+)", body)
        vb = re.search(rf"([\"']){re.escape(key_b)}\1\s*:\s*([^,\n}}]+)", body)
        if not va or not vb or va.group(2).strip() == vb.group(2).strip():
            return None
        spans = sorted([(va.start(2), va.end(2), vb.group(2)), (vb.start(2), vb.end(2), va.group(2))], reverse=True)
        for start, end, value in spans:
            body = body[:start] + value + body[end:]
        return src[: m.start(1)] + body + src[m.end(1) :]

    return mutate


def move_after(block: str, anchor: str) -> Mutate:
    """Move the lines matching ``block`` to just after the line matching ``anchor`` (both regexes)."""

    def mutate(src: str) -> str | None:
        b = re.search(block, src, flags=re.M)
        if not b:
            return None
        rest = src[: b.start()] + src[b.end() :]
        a = re.search(anchor, rest, flags=re.M)
        if not a or a.start() < b.start():  # the block must originally come before the anchor
            return None
        return rest[: a.end()] + b.group(0) + rest[a.end() :]

    return mutate


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    what: str
    mutate: Mutate
    tests: tuple[str, ...]


MUTANTS = [
    Mutant(
        "same-class-without-synset",
        "storage/annotation/names.py",
        "same_class compares word forms only: a 'rock' beside a 'stone' (one synset) counts as another class",
        sub_once(r"return bool\(sa\) and sa == sb", "return False"),
        ("tests/prompts/test_at_control.py", "tests/miners/test_published_shapes.py"),
    ),
    Mutant(
        "control-touch-unchecked",
        "editors/verify.py",
        "the verification no longer refuses an edit touching the control object's class",
        sub_once(r"failures \+= _untouched_failures\(", "_ = _untouched_failures("),
        ("tests/editors/test_edit_verify.py",),
    ),
    Mutant(
        "collateral-only-for-removal",
        "editors/verify.py",
        "another object overwritten by a move / add / replace passes (the rule kept for removals only)",
        sub_once(r'if kind != "attribute" else None', 'if kind == "remove" else None'),
        ("tests/editors/test_edit_verify.py",),
    ),
    Mutant(
        "remaining-claim-unchecked",
        "tasks/builtin_tasks/relational_erasure/qa.py",
        "an RE analysis naming an object the edit cut into still yields questions",
        sub_once(r"    if named:\n        return \[Problem\(", "    if False:\n        return [Problem("),
        ("tests/qa/test_re_claims.py",),
    ),
    Mutant(
        "hidden-objects-seen-by-the-audit",
        "tasks/tools/audit.py",
        "the audit counts a drawn object nobody can see (less than MIN_VISIBLE shows) as visible",
        sub_once(r"return bool\(o\[\"shows\"\]\)", "return True"),
        ("tests/qa/test_audit.py",),
    ),
    Mutant(
        "theta-relational",
        "tasks/builtin_tasks/relational_erasure/miner.py",
        "P >= theta compared with > (no pair exactly at theta)",
        sub_once(r">=(?=\s*[\w.]*\btheta\b)", ">"),
        ("tests/miners",),
    ),
    Mutant(
        "theta-attribute",
        "tasks/builtin_tasks/counterfactual_attribute/miner.py",
        "P >= theta compared with > (no attribute exactly at theta)",
        sub_once(r">=(?=\s*[\w.]*\btheta\b)", ">"),
        ("tests/miners",),
    ),
    Mutant(
        "react-score-ca-weight-changed",
        "tasks/builtin_tasks/counterfactual_attribute/task.py",
        "the CA React-Score weight (TaskSpec.weight) 0.2 made 0.3",
        sub_once(r"weight=0\.2\b", "weight=0.3"),
        ("tests/evaluate/test_metrics.py", "tests/evaluate/test_metrics_schemes.py"),
    ),
    Mutant(
        "lease-capacity-recheck-removed",
        "tasks/review/leasing.py",
        "the re-check of the k lease slots after locking an item removed",
        sub_once(r"if [^\n]*len\(active\)[^\n]*>=\s*k\s*:", "if False:"),
        (
            "tests/review/test_review_queue.py",
            "tests/review/test_review_rules.py",
            "tests/review/test_review_concurrency.py",
        ),
    ),
    Mutant(
        "marker-last",
        "storage/stage_store.py",
        "a shard's rejects written after its completion marker",
        move_after(
            r"^[ \t]*rej = table_from_rows\(REJECTS.*\n[ \t]*write_table\(self\.run, self\.rel\(\"rejects\".*\n",
            r"^[ \t]*self\.run\.write_text_atomic\(self\.rel\(MARKERS.*\n",
        ),
        ("tests/storage",),
    ),
    Mutant(
        "sam-lama-composite-removed",
        "editors/sam_lama.py",
        "the composite that keeps pixels outside the dilated mask removed",
        sub_once(r"np\.where\(\s*(\w+)\[:, :, None\],\s*(\w+),\s*[\w.]+\s*\)", r"\2"),
        ("tests/editors/test_edit_sam_lama.py",),
    ),
    Mutant(
        "stage-key-without-plan",
        "tasks/engine/runner.py",
        "the planned shards left out of the stage key (a new run.shard_size reuses markers by index)",
        sub_once(r', "plan": layout\}', "}"),
        ("tests/faults/test_fault_regrouping.py",),
    ),
    Mutant(
        "reuse-checksum-ignored",
        "storage/reuse_store.py",
        "a reuse entry whose content does not match its checksum is trusted",
        sub_once(r"if doc\[CHECKSUM\] != entry_checksum\(doc\):", "if False:"),
        ("tests/faults/test_fault_reuse_tamper.py",),
    ),
    Mutant(
        "reuse-pack-folder-ignored",
        "storage/reuse_store.py",
        "a shard never reads its own pack folder (every lookup goes through the whole store's index)",
        sub_once(r"        if listed:\n", "        if False:\n"),
        ("tests/storage/test_reuse_verify.py",),
    ),
    Mutant(
        "reuse-pack-torn-trusted",
        "storage/reuse_store.py",
        "a key listed in a pack's header without a line is a plain miss, not recorded as damage",
        sub_once(
            r"        if copy\.raw is None:\n            raise Damaged\(",
            "        if copy.raw is None:\n            return None\n            raise Damaged(",
        ),
        ("tests/storage/test_reuse_verify.py",),
    ),
    Mutant(
        "reuse-image-check-ignored",
        "storage/reuse_store.py",
        "an image a reuse entry refers to is trusted when it exists, whatever its bytes",
        sub_once(r"if own\.intact\(rel\):", "if True:"),
        ("tests/faults/test_fault_reuse_tamper.py",),
    ),
    Mutant(
        "instruct-key-without-code",
        "tasks/stages/instruct.py",
        "the code version dropped from the instruct item key (changed rules code served stale instructions)",
        sub_once(r"\n\s*code=code_version\(\"tasks\.stages\.instruct\", \"prompts\"[^\n]*\),", ""),
        ("tests/flows/test_reuse_code_version.py",),
    ),
    Mutant(
        "eval-key-without-code",
        "tasks/engine/reuse.py",
        "the rules code version dropped from the evaluation answer key (changed rules code served stale answers)",
        sub_once(r"    code = answer_code\(client\.backend\)", "    code = None"),
        ("tests/flows/test_reuse_code_version.py",),
    ),
    Mutant(
        "eval-key-without-plugin-rules",
        "tasks/engine/reuse.py",
        "the evaluation answer key hashes prompts/ only, not a plugin task's eval_rules package",
        sub_once(
            r'return code_version\("prompts", \*\(code for task in task_ids\(\) for code in task_code\(task, "eval_rules"\)\)\)',
            'return code_version("prompts")',
        ),
        ("tests/flows/test_reuse_code_version.py",),
    ),
    Mutant(
        "plugin-hook-code-module-only",
        "tasks/engine/reuse.py",
        "a plugin hook's item-key code counts its own module, not the helper modules of its package",
        sub_once(r"else _package_root\(module\)\)", "else module)"),
        ("tests/flows/test_reuse_code_version.py",),
    ),
    Mutant(
        "export-set-manifest-kept-on-s3",
        "tasks/review/export_set.py",
        "on an object store the old manifest stays while the new set's files are written",
        sub_once(r"    if run\.object_store:\n        run\.rm\(MANIFEST\)\n", "    if run.object_store:\n"),
        ("tests/review/test_review_export_set.py",),
    ),
    Mutant(
        "source-digest-cached-by-path",
        "tasks/stages/edit.py",
        "a local source image's digest cached by its path alone (a replaced image keeps its old digest)",
        sub_once(
            r"return _local_digest\(local, st\.st_size, st\.st_ino, st\.st_mtime_ns, st\.st_ctime_ns\)",
            "return _local_digest(local, 0, 0, 0, 0)",
        ),
        ("tests/flows/test_item_reuse.py::test_a_replaced_source_image_gets_a_new_digest_in_the_same_process",),
    ),
    Mutant(
        "next-ignores-locked-candidates",
        "tasks/review/leasing.py",
        "a request that found the open items only locked (SKIP LOCKED) answers nothing at once",
        sub_once(r"busy = not mine and sql\.postgres and bool\(", "busy = False and bool("),
        ("tests/review/test_review_concurrency.py",),
    ),
    Mutant(
        "run-lock-stale-holder-refuses",
        "storage/run_lock.py",
        "a writer meeting a held flock over a dead holder's lease refuses instead of waiting",
        sub_once(r"if not live_under_flock\(holder\):", "if holder is None:"),
        ("tests/storage/test_run_lock.py",),
    ),
    Mutant(
        "early-refusal-names-stale-holders",
        "storage/run_lock.py",
        "the CLI's early check names a dead holder whose lease file is flock-ed by someone else (a probe or a writer taking over)",
        sub_once(r"return holder if live_under_flock\(holder\) else None", "return holder"),
        ("tests/storage/test_run_lock.py", "tests/flows/test_cli_lock.py"),
    ),
    Mutant(
        "lease-create-unconditional",
        "storage/conditional.py",
        "the object-store lease created by a plain PUT (no If-None-Match): racing writers all win",
        sub_once(r'return self\._put\(path, data, IfNoneMatch="\*"\)', "return self._put(path, data)"),
        ("tests/storage/test_lease_object_store.py",),
    ),
    Mutant(
        "lease-takeover-unconditional",
        "storage/conditional.py",
        "a stale object-store lease replaced by a plain PUT (no If-Match): two writers both take it over",
        sub_once(r"return self\._put\(path, data, IfMatch=version\)", "return self._put(path, data)"),
        ("tests/storage/test_lease_object_store.py",),
    ),
    Mutant(
        "stopped-holder-taken-for-momentary",
        "storage/run_lock.py",
        "a held flock over a lease whose heartbeat lapsed (a stopped holder) is waited out instead of named",
        sub_once(
            r"return not \(holder\.host == socket\.gethostname\(\) and not pid_alive\(holder\.pid\)\)",
            "return stale_reason(holder, time.time()) is None",
        ),
        ("tests/storage/test_run_lock.py",),
    ),
]


def copy_tree(dest: Path) -> Path:
    shutil.copytree(ROOT, dest, ignore=IGNORE, symlinks=True)
    return dest


def run_tests(tree: Path, tests: tuple[str, ...], timeout: float) -> tuple[int, float, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    env = {k: v for k, v in env.items() if not k.startswith("PREFECT_API")}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *tests]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, time.perf_counter() - started, "timeout"
    lines = proc.stdout.strip().splitlines() or [""]
    failed = [ln.split(" - ")[0].removeprefix("FAILED ") for ln in lines if ln.startswith(("FAILED", "ERROR"))]
    tail = lines[-1] + (f"; first failure: {failed[0]}" if failed else "")
    return proc.returncode, time.perf_counter() - started, tail


def verdict(code: int) -> str:
    # pytest: 0 all passed, 1 tests failed, 2 interrupted, 3 internal error, 4 usage error, 5 no tests
    if code == 0:
        return "SURVIVED"
    if code == 1:
        return "killed"
    if code == 5:
        return "no tests"
    if code == -1:
        return "killed (timeout)"
    return f"killed (pytest exit {code}: error, e.g. import or collection)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", help="run only this mutant (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the mutants and whether their patterns are found")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per mutant's test run")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only]
    unknown = set(args.only or []) - {m.name for m in MUTANTS}
    if unknown:
        ap.error(f"unknown mutant(s) {sorted(unknown)}; known: {', '.join(m.name for m in MUTANTS)}")
    results: dict[str, str] = {}
    baseline: dict[tuple[str, ...], tuple[int, float, str]] = {}
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        tree = copy_tree(Path(tmp) / "tree") if not args.list else ROOT
        for m in chosen:
            target = tree / m.path
            if not target.exists():
                results[m.name] = "pattern not found"
                print(f"{m.name:32} pattern not found: {m.path} does not exist ({m.what})", flush=True)
                continue
            original = target.read_text()
            mutated = m.mutate(original)
            if mutated is None or mutated == original:
                results[m.name] = "pattern not found"
                print(
                    f"{m.name:32} pattern not found in {m.path}: retarget it in scripts/mutants.py ({m.what})",
                    flush=True,
                )
                continue
            if args.list:
                results[m.name] = "found"
                print(f"{m.name:32} found in {m.path}: {m.what}; tests: {' '.join(m.tests)}")
                continue
            target.write_text(mutated)
            try:
                code, seconds, tail = run_tests(tree, m.tests, args.timeout)
            finally:
                target.write_text(original)
            results[m.name] = verdict(code)
            if code != 0 and m.tests not in baseline:  # a kill counts only if the unmutated tests pass
                baseline[m.tests] = run_tests(tree, m.tests, args.timeout)
            if code != 0 and baseline[m.tests][0] != 0:
                results[m.name] = "baseline fails"
                tail += f"; the unmutated tests fail too: {baseline[m.tests][2]}"
            print(
                f"{m.name:32} {results[m.name]:10} in {seconds:6.1f} s  ({m.what}; {' '.join(m.tests)}: {tail})",
                flush=True,
            )
    survived = sorted(k for k, v in results.items() if v in ("SURVIVED", "no tests", "baseline fails"))
    missing = sorted(k for k, v in results.items() if v == "pattern not found")
    killed = sorted(k for k, v in results.items() if v.startswith("killed"))
    print(
        json.dumps(
            {"mutants": len(results), "killed": len(killed), "survived": survived, "pattern_not_found": missing}
        )
    )
    if args.list:
        return 2 if missing else 0
    return 1 if survived else (2 if missing else 0)


if __name__ == "__main__":
    sys.exit(main())
