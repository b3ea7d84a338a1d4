"""bench-quick's questions and the README table it writes."""

from __future__ import annotations

import os
from pathlib import Path

from bench import bench_quick

RESULT = {
    "created": "2026-11-27 11:00 UTC",
    "corpus": {"chunks": 1234},
    "phases": [
        {
            "transport": "gRPC",
            "concurrency": 1,
            "answers_per_s": 50.0,
            "p50_ms": 18.0,
            "p99_ms": 40.0,
            "cpu_ms_per_answer": 19.5,
        },
        {
            "transport": "HTTP",
            "concurrency": 8,
            "answers_per_s": 90.0,
            "p50_ms": 80.0,
            "p99_ms": 150.0,
            "cpu_ms_per_answer": 21.0,
        },
    ],
    "bridge_overhead_p50_ms": 1.5,
    "reference_ms": 61.4,
}


def test_the_readme_table_is_replaced_between_its_markers_only(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n\nbefore\n<!-- bench-quick -->\nold table\n<!-- /bench-quick -->\nafter\n")
    assert bench_quick.update_readme(RESULT, readme)
    text = readme.read_text()
    assert text.startswith("# Title\n\nbefore\n<!-- bench-quick -->\n") and text.endswith(
        "<!-- /bench-quick -->\nafter\n"
    )
    assert "old table" not in text
    assert (
        "| gRPC | 1 | 50.0 | 18.0 | 40.0 | 19.5 |" in text
        and "| HTTP | 8 | 90.0 | 80.0 | 150.0 | 21.0 |" in text
    )
    assert "1234 chunks" in text and "overhead, p50 at concurrency 1: 1.5 ms" in text
    assert "61 ms of CPU for bench-quick's reference loop" in text


def test_a_readme_without_markers_is_left_alone(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Title\n")
    assert not bench_quick.update_readme(RESULT, readme)
    assert readme.read_text() == "# Title\n"


def test_the_questions_are_of_every_kind_and_the_same_every_run(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(
        'class Widget:\n    """Draw a widget on the screen for the user."""\n\n'
        'def render_page(x):\n    """Render one page of the manual to text."""\n    return x\n\n'
        "def _private():\n    pass\n"
    )
    asked = bench_quick.questions(tmp_path)
    assert set(asked) == {
        "Widget",
        "subclasses of Widget",
        "how does Widget work",
        "Draw a widget on the screen for the user.",
        "render_page",
        "who calls render_page",
        "how does render_page work",
        "Render one page of the manual to text.",
    }
    assert bench_quick.questions(tmp_path) == asked


def test_each_figure_is_the_median_of_its_rounds_and_the_overhead_is_taken_within_a_round() -> None:
    def round_of(grpc_p50: float, http_p50: float, cpu: float) -> list[bench_quick.Phase]:
        return [
            bench_quick.Phase("gRPC", 1, answers=10, p50_ms=grpc_p50, cpu_ms_per_answer=cpu),
            bench_quick.Phase("HTTP", 1, answers=10, p50_ms=http_p50, cpu_ms_per_answer=cpu + 1),
        ]

    # the second round ran while another job slowed the machine
    rounds = [round_of(20.0, 22.0, 30.0), round_of(60.0, 40.0, 90.0), round_of(21.0, 24.0, 31.0)]
    grpc_c1, http_c1 = bench_quick.medians(rounds)
    assert (grpc_c1.transport, grpc_c1.p50_ms, grpc_c1.cpu_ms_per_answer, grpc_c1.answers) == (
        "gRPC",
        21.0,
        31.0,
        30,
    )
    assert (http_c1.transport, http_c1.p50_ms, http_c1.cpu_ms_per_answer) == ("HTTP", 24.0, 32.0)


def test_each_process_cpu_is_the_median_of_its_rounds() -> None:
    def phase(vector: float, postgresql: float) -> bench_quick.Phase:
        split = {"vector": vector, "postgresql": postgresql}
        return bench_quick.Phase("gRPC", 8, answers=10, cpu_ms_by_process=split)

    rounds = [[phase(5.0, 2.0)], [phase(9.0, 1.0)], [phase(6.0, 3.0)]]
    (merged,) = bench_quick.medians(rounds)
    assert merged.cpu_ms_by_process == {"vector": 6.0, "postgresql": 2.0}


def test_cpu_is_counted_by_what_each_process_serves() -> None:
    """A service is named by its `serve <name>` command line, whoever started it; the rest is
    "other"."""
    import subprocess
    import sys

    from bench import server_cpu

    with subprocess.Popen(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)", "serve", "sparse"],
        stdout=subprocess.PIPE,
    ) as service:
        try:
            # until the child has run its command line, /proc shows pytest's (fork before exec)
            assert service.stdout is not None and service.stdout.readline() == b"up\n"
            named = server_cpu.service_of(service.pid), server_cpu.service_of(os.getpid())
            counted = server_cpu.cpu_by_process([service.pid])
            own = server_cpu.cpu_by_process([os.getpid()])
        finally:
            service.kill()
    assert named == ("sparse", None)
    assert list(counted) == ["sparse"]
    # as under the supervisor: its children are counted by what they serve, itself as "other"
    assert set(own) == {"other", "sparse"} and own["other"] > 0  # pytest itself has used CPU


def test_the_cpu_of_a_process_that_ended_stays_counted() -> None:
    """A child that burns CPU and ends between two readings (a PostgreSQL backend closed by its
    pool) still counts, in its parent's waited-for time: a difference of readings never drops it."""
    import subprocess
    import sys

    from bench import server_cpu

    burn = "import time; t = time.process_time(); exec('while time.process_time() - t < 0.3: pass')"
    parent = (
        "import subprocess, sys, time; print('up', flush=True); sys.stdin.readline();"
        f" subprocess.run([sys.executable, '-c', {burn!r}]); print('done', flush=True); time.sleep(30)"
    )
    with subprocess.Popen(
        [sys.executable, "-c", parent, "serve", "vector"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as service:
        try:
            assert service.stdin is not None and service.stdout is not None
            assert service.stdout.readline() == b"up\n"
            before = server_cpu.cpu_by_process([service.pid])
            service.stdin.write(b"go\n")
            service.stdin.flush()
            assert service.stdout.readline() == b"done\n"  # the child has ended and been waited for
            after = server_cpu.cpu_by_process([service.pid])
        finally:
            service.kill()
    assert after["vector"] - before["vector"] >= 0.25
