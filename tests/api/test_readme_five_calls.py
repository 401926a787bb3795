"""The README's five calls, run as a newcomer runs them: its shell block, unchanged but for the key,
the address and the recall id step 5 asks the reader to paste, by bash and curl against a live
server on the test database. Each answer is checked against the ``# →`` line the README prints
under its call, so the first read cannot drift from what the service answers."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tenants.caller import tenant_caller
from tenants.models import all_key_permissions
from tenants.services import api_key_create, tenant_create

README = Path(__file__).resolve().parents[2] / "README.md"
# Each curl's body goes to a numbered file as well as to its reader (a command substitution
# runs in a subshell, so the count lives in a file).
CAPTURE = """
curl() {
  local n; n=$(( $(cat "$OUT/count") + 1 )); echo "$n" > "$OUT/count"
  command curl --fail-with-body "$@" | tee "$OUT/$n.json"
}
"""

# What the reader pastes in step 5: the recall id of step 4's first answer (the fourth call).
PASTE_STEP_4 = """$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["recall_id"])' "$OUT/4.json")"""


def five_calls_block() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## The five calls", 1)[1]
    match = re.search(r"^```sh\n(.*?)^```", section, re.S | re.M)
    assert match, "the README's five calls have no sh block"
    return match.group(1)


def expected_after(block: str, marker: str) -> str:
    """The ``# →`` line (and its continuation) the README prints after the line holding ``marker``."""
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if marker in line)
    arrow = next(i for i in range(start, len(lines)) if lines[i].startswith("# →"))
    out = [lines[arrow][len("# →"):].strip()]
    if arrow + 1 < len(lines) and lines[arrow + 1].startswith("#    "):
        out.append(lines[arrow + 1][1:].strip())
    return " ".join(out)


def readme_json(expected: str) -> dict[str, Any]:
    """What the README shows of a JSON answer, with its elisions (``…``) left out: a dict of the
    top-level values it prints whole."""
    found: dict[str, Any] = {}
    for key, raw in re.findall(r'"(\w+)":("[^"…]*"|-?\d+(?:\.\d+)?|true|false)(?=[,}])', expected):
        found.setdefault(key, json.loads(raw))
    return found


@pytest.mark.django_db(transaction=True)
def test_the_readme_five_calls_answer_as_printed(live_server: Any, tmp_path: Path) -> None:
    tenant = tenant_create(slug="readme")
    _, key = api_key_create(caller=tenant_caller(tenant), name="readme", permissions=all_key_permissions())
    block = five_calls_block()
    script = (block.replace("KEY=tc_…", f"KEY={key}", 1)
              .replace("B=http://127.0.0.1:8000/api/v1", f"B={live_server.url}/api/v1", 1)
              .replace("<recall_id from step 4>", PASTE_STEP_4, 1))
    assert script.count(key) == 1 and live_server.url in script and "<recall_id" not in script
    (tmp_path / "count").write_text("0")
    run = subprocess.run(["bash", "-c", "set -eo pipefail\n" + CAPTURE + script], capture_output=True, text=True,
                         env={"OUT": str(tmp_path), "PATH": "/usr/bin:/bin:/usr/local/bin"}, timeout=120)
    assert run.returncode == 0, run.stderr
    answers = [json.loads((tmp_path / f"{n}.json").read_text()) for n in range(1, 7)]
    upsert, first, record, again, reworded, feedback = answers

    # 1. The upsert, exactly as printed.
    assert upsert == readme_json(expected_after(block, "curl -s -X PUT"))
    # 2. The first recall prints "outcome reason" to stderr and the recall id to stdout.
    assert expected_after(block, "RID=$(curl") == "miss no_candidate"
    assert f"{first['outcome']} {first['reason']}" in run.stderr
    # 3. The record, linked to that recall.
    shown = readme_json(expected_after(block, "curl -s -X POST $B/trails"))
    assert record["status"] == shown["status"] == "active" and record["trail_id"]
    # 4. The question asked again as keywords: the verified text. A freer rewording: no text.
    lines = block.splitlines()
    same, other = (i for i, line in enumerate(lines) if line.startswith("curl -s -X POST $B/recall "))
    for answer, at in ((again, same), (reworded, other)):
        shown_line = next(line for line in lines[at:] if line.startswith("# →"))
        shown = readme_json(shown_line + " " + lines[lines.index(shown_line) + 1])
        for field in ("outcome", "reason"):
            assert answer[field] == shown[field], (field, answer, shown_line)
        # The int8 model's vectors differ in the last digits from one CPU to another: a printed
        # confidence holds to the third decimal (0.1232 on one machine, 0.1233 on another).
        assert abs(answer["confidence"] - shown["confidence"]) <= 0.001, (answer, shown_line)
    assert again["sections"][0]["id"] == "guide/install.md#linux" and again["sections"][0]["status"] == "valid"
    assert again["sections"][0]["text"].startswith("On Linux, run apt install acme-sync.")
    assert all("text" not in section for section in reworded["sections"])
    # 5. Feedback on the served recall quarantines the trail it served.
    assert feedback == {"recall_id": again["recall_id"], "accepted": False}
