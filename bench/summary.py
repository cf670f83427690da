"""``python -m bench summary``: the goal tables of docs/metrics.md ("Every goal, as last
measured"), generated from the reports in ``bench/results/*.json``.

The tables go between the lines ``<!-- measured:begin -->`` and ``<!-- measured:end -->`` of
docs/metrics.md (everything else in the file is left as it is; README.md keeps one hand-made
table of headline numbers). One table per benchmark; each row is
a metric, what was measured (p50 / p95 where it is a distribution), the goal, whether it is met,
and the report it comes from. A report that is missing gives one row saying "not run"; a
report whose layout this module does not know (``load.json``, ``soak.json`` until their
benchmarks settle) gives the goals it states, if any, and a pointer to its Markdown.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.paths import REPO, RESULTS

DEFAULT_RESULTS = RESULTS
DOC = REPO / "docs" / "metrics.md"
BEGIN = "<!-- measured:begin -->"
END = "<!-- measured:end -->"

Report = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Row:
    metric: str
    measured: str
    goal: str = "–"
    met: bool | None = None


@dataclass(frozen=True, slots=True)
class Section:
    """One benchmark's table."""

    title: str
    report: str
    """File name in the results folder, e.g. ``captions-realtime.json``."""
    command: str
    rows: list[Row] = field(default_factory=list)
    context: str = ""
    """Said after the command in the heading: date, recordings, ..."""
    ran: bool = True


# --- formatting ------------------------------------------------------------------------------


def num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def seconds(d: Mapping[str, Any] | None, digits: int = 2) -> str:
    """``p50 / p95 s`` of a distribution (``–`` when it has no values)."""
    if not d or d.get("p50") is None:
        return "–"
    return f"{num(d['p50'], digits)} / {num(d.get('p95'), digits)} s"


def millis(d: Mapping[str, Any] | None, p99: bool = False) -> str:
    """``p50 / p95 ms`` (and p99) of a distribution in seconds."""
    if not d or d.get("p50") is None:
        return "–"
    text = f"{d['p50'] * 1000:.0f} / {d['p95'] * 1000:.0f} ms"
    if p99 and d.get("p99") is not None:
        text += f" (p99 {d['p99'] * 1000:.0f} ms)"
    return text


def _date(report: Report) -> str:
    created = report.get("created_utc")
    return str(created)[:10] if created else ""


def _mark(met: bool | None) -> str:
    return {True: "met", False: "**not met**", None: "–"}[met]


# --- one function per report -------------------------------------------------------------------


def captions_section(report: Report | None) -> Section:
    section = Section(
        "Live captions", "captions-realtime.json", "python -m bench captions --mode realtime"
    )
    if report is None:
        return section
    o, goals, met = report["overall"], report.get("goals", {}), report.get("goals_met", {})
    model = report.get("offline_baseline", {}).get("model", "offline")
    context = (
        f"{_date(report)}; {o.get('files')} English long-form recordings, "
        f"{num(o.get('audio_s'), 0)} s; latency per reference word from the end of the word "
        "in the audio"
    )
    rows = [
        Row(
            "draft latency (word first shown)",
            seconds(o.get("draft_latency_s")),
            f"p50 <= {goals.get('draft_latency_p50_s', '–')} s",
            met.get("draft_latency_p50"),
        ),
        Row(
            "final latency (word final)",
            seconds(o.get("final_latency_s")),
            f"p50 <= {goals.get('final_latency_p50_s', '–')} s",
            met.get("final_latency_p50"),
        ),
        Row(
            f"WER of the finals (offline {model} beam 5 on the same files: "
            f"{num(o.get('offline_wer'), 3)})",
            f"{num(o.get('wer'), 3)} (ratio {num(o.get('wer_ratio'))})",
            f"ratio <= {goals.get('wer_ratio_max', '–')}",
            met.get("wer_ratio"),
        ),
        Row("time to first caption (per file)", seconds(o.get("time_to_first_caption_s"))),
        Row("lag at the end of the stream (per file)", seconds(o.get("end_lag_s"))),
        Row("normalised erasure of the drafts", num(o.get("erasure"), 3)),
        Row("CPU seconds per audio second", num(o.get("cpu_per_audio_s"))),
    ]
    return _filled(section, report, rows, context)


def _lanes(report: Report, key: str) -> list[Mapping[str, Any]]:
    lanes: list[Mapping[str, Any]] = report.get(key, [])
    return lanes


def translation_section(report: Report | None) -> Section:
    section = Section("Translation", "translation.json", "python -m bench translation")
    if report is None:
        return section
    o, goals, met = report["overall"], report.get("goals", {}), report.get("goals_met", {})
    latency = _lanes(report, "latency")
    talk = latency[0] if latency else None
    where = f" ({talk['talk']}, {talk['source']}->{talk['target']})" if talk else ""
    rows = [
        Row(
            f"Apertium final translation after the source final completing its sentence{where}",
            millis(o.get("apertium_final_delay_s")),
            f"p95 <= {goals.get('apertium_final_delay_p95_s', 0) * 1000:.0f} ms",
            met.get("apertium_final_delay_p95"),
        ),
        Row(
            "Whisper-translate final after the source final completing its sentence, "
            "segments <= 10 s "
            "(FLEURS talks, X->en)",
            seconds(o.get("whisper_final_delay_upto_10s_s")),
            f"p50 <= {goals.get('whisper_final_delay_p50_s', '–')} s",
            met.get("whisper_final_delay_p50"),
        ),
        Row(
            f"erasure of the shown draft translations{where}",
            f"{num(o.get('translation_erasure'), 3)} (the source captions on the same "
            f"socket: {num(o.get('source_erasure'), 3)})",
            f"<= {goals.get('translation_erasure_max', '–')}",
            met.get("translation_erasure"),
        ),
    ]
    if talk is not None:
        rows.append(
            Row(
                f"first translation shown after the segment's first source caption{where}",
                seconds(talk.get("first_shown_delay_s")),
            )
        )
    laal = o.get("laal_s")
    for kind, label in (("whisper", "Whisper-translate, X->en"), ("apertium", "Apertium, en->X")):
        metric = f"LAAL of the final translations, FLEURS clips ({label})"
        if laal is None:
            rows.append(Row(metric, "not in this report (its run predates LAAL)"))
        elif laal.get(kind, {}).get("count"):
            rows.append(Row(metric, seconds(laal[kind])))
    text = [t for t in report.get("text", []) if t.get("bleu") is not None]
    if text:
        sentences = report.get("settings", {}).get("sentences", "")
        rows.append(
            Row(
                f"Apertium on FLORES-200 devtest (first {sentences}), BLEU / chrF",
                ", ".join(
                    f"{t['source']}->{t['target']} {num(t['bleu'], 1)} / {num(t['chrf'], 1)}"
                    for t in text
                ),
            )
        )
    speech = [lane for lane in _lanes(report, "speech") if lane.get("bleu") is not None]
    if speech:
        rows.append(
            Row(
                "FLEURS speech through the live pipeline (streaming finals), BLEU / chrF",
                ", ".join(
                    f"{lane['source']}->{lane['target']} {num(lane['bleu'], 1)} / "
                    f"{num(lane['chrf'], 1)}"
                    for lane in speech
                ),
            )
        )
    return _filled(section, report, rows, _date(report))


def speech_section(report: Report | None) -> Section:
    section = Section("Spoken translation", "speech.json", "python -m bench speech")
    if report is None:
        return section
    goals: Mapping[str, Any] = report.get("goals", {})
    rows: list[Row] = []
    for run in report.get("server", []):
        for r in run.get("listeners", []):
            where = f"{run.get('source')}->{r.get('lang')}"
            goal = goals.get(f"first audio p50, idle voice ({where})", {})
            kokoro = goals.get(f"first audio p50, idle voice ({where}, Kokoro)", {})
            rows.append(
                Row(
                    f"first audio after the final caption, idle voice ({where}, "
                    f"{run.get('recording')})",
                    seconds(r.get("first_audio_idle_s")),
                    f"p50 {goal['goal']} s" if goal.get("goal") else "–",
                    goal.get("met"),
                )
            )
            if kokoro:
                rows.append(
                    Row(
                        f"first audio after the final caption, idle voice, spoken by Kokoro "
                        f"({where}; chunks natural / fast: {r.get('natural_chunks')} / "
                        f"{r.get('fast_chunks')})",
                        seconds(r.get("first_audio_idle_natural_s")),
                        f"p50 {kokoro['goal']} s",
                        kokoro.get("met"),
                    )
                )
            rows.append(
                Row(
                    f"first audio after the final caption, all segments ({where})",
                    seconds(r.get("first_audio_all_s")),
                )
            )
            if r.get("speech_stage_lag_s"):
                rows.append(
                    Row(
                        f"speech-stage lag: end of playback − final translation ({where})",
                        seconds(r["speech_stage_lag_s"])
                        + f" (max {num(r['speech_stage_lag_s'].get('max'))} s)",
                    )
                )
            if r.get("speech_stage_wait_s"):
                rows.append(
                    Row(
                        f"speech-stage wait: the stage lag less the final's own audio ({where})",
                        seconds(r["speech_stage_wait_s"])
                        + f" (max {num(r['speech_stage_wait_s'].get('max'))} s)",
                    )
                )
            bounded = goals.get(f"lag bounded over the replay ({where})", {})
            lag = r.get("lag_s") or {}
            rows.append(
                Row(
                    f"total lag: end of playback − end of the sentence spoken ({where})",
                    seconds(lag) + f" (max {num(lag.get('max'))} s; last third max "
                    f"{num(r.get('lag_last_third_max_s'))} s, first third "
                    f"{num(r.get('lag_first_third_max_s'))} s)",
                    f"bounded: {bounded['goal']}" if bounded.get("goal") else "–",
                    bounded.get("met"),
                )
            )
    for v in report.get("voices", []):
        rows.append(
            Row(
                f"voice synthesis, real-time factor ({v.get('lang')}, {v.get('voice')})",
                f"{num(v.get('rtf_overall'), 3)} overall; first piece "
                + seconds(v.get("first_piece_seconds")),
            )
        )
    return _filled(section, report, rows, _date(report))


TALK_GOALS = {"translation_shown_s": 1.5, "audio_start_s": 2.0}
"""bench/talk.py's ``GOALS`` (issue 10), seconds from the end of speech."""


def talk_section(report: Report | None, detect: bool) -> Section:
    name = "talk-detect.json" if detect else "talk.json"
    section = Section(
        "Traveller mode, language " + ("detected" if detect else "given"),
        name,
        "python -m bench talk" + (" --detect" if detect else ""),
    )
    if report is None:
        return section
    try:
        from bench.talk import GOALS as goals
    except ImportError:  # pragma: no cover - bench.talk needs the engine
        goals = TALK_GOALS
    s: Mapping[str, Any] = report.get("summary", {})
    labels = {
        "translation_shown_s": "translation shown after the end of speech",
        "audio_start_s": "translation audio starts after the end of speech",
    }
    rows = []
    turns = len(report.get("turns", []))
    for key, label in labels.items():
        d = s.get(f"{key}:all")
        goal = goals.get(key)
        p50 = d.get("p50") if d else None
        rows.append(
            Row(
                f"{label} ({d.get('count') if d else 0} of {turns} turns)",
                seconds(d),
                "–" if goal is None else f"p50 <= {goal} s",
                None if goal is None or p50 is None else p50 <= goal,
            )
        )
    d = report.get("detection", {})
    if detect and d:
        rows.append(
            Row("turns recognised in the speaker's language", f"{d['right']} of {d['turns']}")
        )
    return _filled(section, report, rows, _date(report))


def _fanout_goals() -> tuple[int, float]:
    from bench.fanout import Goals

    goals = Goals()
    return goals.listeners, goals.delay_p99_s


def fanout_section(report: Report | None) -> Section:
    section = Section("Audience fan-out, one process", "fanout.json", "python -m bench fanout")
    if report is None:
        return section
    goals = report.get("goals", {})
    target = goals.get("listeners")
    p99 = goals.get("delay_p99_s")
    rows = []
    for r in report.get("rounds", []):
        server = r.get("server", {})
        finals = r.get("finals", {})
        at_goal = r.get("listeners") == target
        rows.append(
            Row(
                f"{r['listeners']} listeners: delay from the event's server `ts` to receipt",
                f"{millis(r.get('delay_s'), p99=True)}; {finals.get('listeners_exact')} of "
                f"{r['listeners']} got every final; server {num(server.get('cpu_cores'))} "
                f"cores, {num(server.get('rss_peak_mib'), 0)} MiB",
                f"p99 <= {p99 * 1000:.0f} ms, every final everywhere"
                if at_goal and p99 is not None
                else "–",
                r.get("goal_met") if at_goal else None,
            )
        )
    return _filled(section, report, rows, _date(report))


def fanout_nodes_section(report: Report | None) -> Section:
    section = Section(
        "Audience fan-out across processes sharing Redis",
        "fanout-nodes.json",
        "python -m bench fanout-nodes",
    )
    if report is None:
        return section
    target, p99_goal = _fanout_goals()
    rows = []
    for r in report.get("rounds", []):
        delay = r.get("delay_s", {})
        exact = r.get("finals", {}).get("listeners_exact")
        cores = r.get("server_cpu_cores") or []
        single = r.get("single_process") or {}
        at_goal = r.get("listeners") == target
        met = None
        if at_goal and delay.get("p99") is not None:
            met = delay["p99"] <= p99_goal and exact == r["listeners"]
        measured = (
            f"{millis(delay, p99=True)}; {exact} of {r['listeners']} got every final; "
            f"server processes {' + '.join(num(c) for c in cores)} cores, Redis "
            f"{num(r.get('redis_cpu_cores'))}"
        )
        if single.get("delay_s"):
            measured += f" (one process: {millis(single['delay_s'], p99=True)})"
        rows.append(
            Row(
                f"{r['listeners']} listeners on {r.get('nodes')} processes: delay",
                measured,
                f"p99 <= {p99_goal * 1000:.0f} ms, every final everywhere" if at_goal else "–",
                met,
            )
        )
    return _filled(
        section, report, rows, f"{_date(report)}; Redis {report.get('redis_version', '')}"
    )


def capacity_section(report: Report | None, speech: str | None = None) -> Section:
    section = (
        Section("Capacity", "capacity.json", "python -m bench capacity")
        if speech is None
        else Section(
            f"Capacity with a Kokoro listener per session ({speech})",
            "capacity-speech.json",
            f"python -m bench capacity --speech {speech}",
        )
    )
    if report is None:
        return section
    limit = report.get("lag_limit_s")
    rounds = report.get("rounds", [])
    rows = [
        Row(
            f"simultaneous real-time presenters whose caption lag stays under {limit} s",
            f"{report.get('capacity')} (rounds tried: {len(rounds)}, at most "
            f"{report.get('max_presenters')})",
        )
    ]
    for r in rounds:
        lag = r.get("lag_s", {})
        other = r.get("machine", {}).get("other_cores")
        cores = r.get("server", {}).get("cpu_cores")
        rows.append(
            Row(
                f"{r['presenters']} presenter(s) at once: caption lag",
                seconds(lag) + f" (max {num(lag.get('max'))} s; server {num(cores)} cores; "
                f"other work {num(other)} cores)",
                f"every sample < {limit} s",
                r.get("passed"),
            )
        )
    return _filled(section, report, rows, _date(report))


def webrtc_section(report: Report | None) -> Section:
    section = Section(
        "Presenter audio over WebRTC and WebSocket", "webrtc.json", "python -m bench webrtc"
    )
    if report is None:
        return section
    rows = []
    for t in report.get("transports", []):
        o = t.get("overall", {})
        name = t.get("transport")
        rows += [
            Row(f"{name}: draft latency", seconds(o.get("draft_latency_s"))),
            Row(f"{name}: final latency", seconds(o.get("final_latency_s"))),
            Row(
                f"{name}: WER of the finals",
                f"{num(o.get('wer'), 3)} (offline {num(o.get('offline_wer'), 3)})",
            ),
        ]
    recordings = report.get("recordings", [])
    return _filled(section, report, rows, f"{_date(report)}; {len(recordings)} recordings")


def peer_section(report: Report | None) -> Section:
    section = Section("Peer, side by side", "peer.json", "python -m bench peer")
    if report is None:
        return section
    peer = report.get("peer", {})
    name = peer.get("name", "peer")
    systems = report.get("systems", {})
    ours = systems.get("ours", {}).get("overall", {})
    theirs = systems.get("peer", {}).get("overall", {})
    goals = report.get("goals", {})
    met = report.get("goals_met", {})
    verdicts = met.get("met", {})

    def ratio_row(label: str, key: str, goal_key: str, met_key: str) -> Row:
        a, b = ours.get(key, {}), theirs.get(key, {})
        return Row(
            f"{label} p50, ours / {name}",
            f"{num(met.get(goal_key))} (ours {seconds(a)}, {name} {seconds(b)})",
            f"<= {goals.get(goal_key + '_max', '–')}",
            verdicts.get(met_key),
        )

    rows = [
        ratio_row(
            "draft latency", "draft_latency_s", "draft_latency_p50_ratio", "draft_latency_p50"
        ),
        ratio_row(
            "final latency", "final_latency_s", "final_latency_p50_ratio", "final_latency_p50"
        ),
        Row(
            f"WER, ours / {name}",
            f"{num(met.get('wer_ratio'))} (ours {num(ours.get('wer'), 3)}, {name} "
            f"{num(theirs.get('wer'), 3)})",
            f"<= {goals.get('wer_ratio_max', '–')}",
            verdicts.get("wer"),
        ),
        Row(
            f"CPU seconds per audio second, ours / {name}",
            f"{num(ours.get('cpu_per_audio_s'))} / {num(theirs.get('cpu_per_audio_s'))}",
        ),
    ]
    version = peer.get("versions", {}).get("whisperlivekit")
    context = f"{_date(report)}; {name} {version}" if version else _date(report)
    return _filled(section, report, rows, context)


def generic_section(title: str, name: str, command: str, report: Report | None) -> Section:
    """A report of unknown layout: the goals it states (``goals`` entries with ``value``,
    ``goal`` and ``met``, or a ``goals_met`` of booleans), else a pointer to its Markdown."""
    section = Section(title, name, command)
    if report is None:
        return section
    rows: list[Row] = []
    goals = report.get("goals")
    if isinstance(goals, Mapping):
        for key, goal in goals.items():
            if isinstance(goal, Mapping) and "met" in goal:
                rows.append(
                    Row(
                        str(key),
                        str(goal.get("value", "–")),
                        str(goal.get("goal", "–")),
                        goal.get("met"),
                    )
                )
    met = report.get("goals_met")
    if not rows and isinstance(met, Mapping):
        for key, value in met.items():
            if isinstance(value, bool) or value is None:
                goal = goals.get(key, "–") if isinstance(goals, Mapping) else "–"
                rows.append(Row(str(key), "see the report", str(goal), value))
    if not rows:
        rows.append(Row("(no goals stated in the report)", f"see {Path(name).stem}.md"))
    return _filled(section, report, rows, _date(report))


def _filled(section: Section, report: Report, rows: list[Row], context: str) -> Section:
    return Section(
        title=section.title,
        report=section.report,
        command=str(report.get("command") or section.command).replace(f"{REPO}/", ""),
        rows=rows,
        context=context,
    )


# --- the whole block ---------------------------------------------------------------------------


def load_report(results: Path, name: str) -> Report | None:
    """``results/name`` as JSON, ``None`` if it is missing or unreadable."""
    path = results / name
    try:
        data: Report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data


SectionMaker = Callable[[Report | None], Section]

SECTIONS: tuple[tuple[str, SectionMaker], ...] = (
    ("captions-realtime.json", captions_section),
    ("translation.json", translation_section),
    ("speech.json", speech_section),
    (
        "voices.json",
        lambda r: generic_section("Natural voices", "voices.json", "python -m bench voices", r),
    ),
    (
        "voice-load.json",
        lambda r: generic_section(
            "Captions while Kokoro speaks", "voice-load.json", "python -m bench voice-load", r
        ),
    ),
    ("talk.json", lambda r: talk_section(r, detect=False)),
    ("talk-detect.json", lambda r: talk_section(r, detect=True)),
    ("fanout.json", fanout_section),
    ("fanout-nodes.json", fanout_nodes_section),
    ("capacity.json", capacity_section),
    ("capacity-speech.json", lambda r: capacity_section(r, speech="es")),
    ("webrtc.json", webrtc_section),
    ("peer.json", peer_section),
    ("load.json", lambda r: generic_section("Load", "load.json", "python -m bench load", r)),
    ("soak.json", lambda r: generic_section("Soak", "soak.json", "python -m bench soak", r)),
)


def sections(results: Path) -> list[Section]:
    """Every table, from the reports in ``results`` (a missing report: "not run")."""
    out = []
    for name, make in SECTIONS:
        report = load_report(results, name)
        section = make(report)
        if report is None:
            section = Section(section.title, name, section.command, ran=False)
        out.append(section)
    return out


def render(items: Iterable[Section], link_prefix: str = "../bench/results/") -> str:
    """The Markdown between the markers (markers excluded)."""
    lines = [
        "<!-- generated by `python -m bench summary` from bench/results/*.json: rerun it, "
        "do not edit by hand -->",
        "",
    ]
    for s in items:
        link = f"[{s.report}]({link_prefix}{s.report})"
        heading = f"**{s.title}** (`{s.command}`" + (f"; {s.context}" if s.context else "") + ")"
        if not s.ran:
            lines += [f"**{s.title}** (`{s.command}`): not run (no `{s.report}`).", ""]
            continue
        lines += [
            heading + ":",
            "",
            "| metric | measured (p50 / p95) | goal | met | report |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r.metric} | {r.measured} | {r.goal} | {_mark(r.met)} | {link} |" for r in s.rows
        ]
        lines.append("")
    return "\n".join(lines)


def replace_block(text: str, block: str) -> str:
    """``text`` with everything between the marker lines replaced by ``block``. A marker
    counts only as a line of its own, so prose that names the markers is left alone."""
    lines = text.splitlines(keepends=True)
    stripped = [line.strip() for line in lines]
    if BEGIN not in stripped or END not in stripped:
        raise ValueError(f"the document needs the lines {BEGIN} and {END}, in that order")
    begin = stripped.index(BEGIN)
    end = stripped.index(END)
    if end < begin:
        raise ValueError(f"the document needs the lines {BEGIN} and {END}, in that order")
    body = block.rstrip("\n") + "\n"
    return "".join(lines[: begin + 1]) + body + "".join(lines[end:])


def update_doc(results: Path, doc: Path) -> str:
    """Regenerate the block in ``doc`` from ``results``; return the block."""
    block = render(sections(results))
    doc.write_text(replace_block(doc.read_text(encoding="utf-8"), block), encoding="utf-8")
    return block


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench summary", description=__doc__)
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument(
        "--print", action="store_true", help="print the block instead of writing --doc"
    )
    args = parser.parse_args(list(argv))
    if args.print:
        print(render(sections(args.results)))
        return 0
    try:
        update_doc(args.results, args.doc)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    print(f"updated {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
