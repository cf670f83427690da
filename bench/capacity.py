"""The capacity benchmark: how many presenters can speak at once before captions fall behind.

Round N: N presenters, each replaying a different real recording in real time to its own
session, all at once. A presenter's lag is how far the captions it receives trail the audio
it has sent (docs/metrics.md, "Capacity"). A round passes when every replay completes and
every presenter's lag stays under the limit (2 s) the whole time. Rounds go N = 1, 2, ...
up to ``--max`` against one server and stop at the first that fails; the capacity is the
largest N that passed. With ``--speech LANG`` the first presenter's session also offers LANG
and has one listener with audio on in it (Kokoro for es, fr, it, pt): one spoken language
active on the server; the report is ``capacity-speech.*``. With ``--panel`` the N presenters
are the N speakers of one session (a panel: the presenter and N - 1 speakers it added), each
measured on their own captions; the report is ``capacity-panel.*``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench.format import (
    fixed,
    machine_line,
    mib,
    pyplot,
    save_figure,
    slashed,
    utc_now,
    write_report_files,
)
from bench.metrics import Distribution, SendSchedule, distribution
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, Recording, default_wavs, load_recording, resolve_wavs
from bench.replay import (
    Replay,
    ReplayError,
    add_speaker,
    create_session,
    present,
    replay,
    trimmed,
)
from bench.resources import CpuUse, RssSampler, cpu_snapshot, cpu_use, machine_info
from bench.server import ServerHandle, server_arguments, server_under_test
from bench.speech import present_to_listener

DEFAULT_MAX = 4
"""The server's default ``max_live_streams`` (app/settings.py)."""
LAG_LIMIT_S = 2.0


@dataclass(frozen=True, slots=True)
class LagSample:
    """The lag seen when one source caption arrived."""

    at: float
    """Seconds since the presenter's first audio chunk was sent."""
    sent: float
    """Seconds of audio sent by then."""
    covered: float
    """The largest caption ``end`` received so far (seconds of session audio)."""

    @property
    def lag(self) -> float:
        return self.sent - self.covered


def lag_series(schedule: SendSchedule, captions: Iterable[tuple[float, float]]) -> list[LagSample]:
    """Lag at each source caption's arrival.

    ``captions`` are ``(arrival, end)`` of the presenter's source caption events (drafts and
    finals) in arrival order, ``arrival`` on the clock of ``schedule``. The audio covered is
    the largest ``end`` so far, so a late final of an earlier segment does not count as
    falling back.
    """
    first = schedule.send_times[0]
    covered = 0.0
    samples: list[LagSample] = []
    for arrival, end in captions:
        covered = max(covered, end)
        samples.append(LagSample(arrival - first, schedule.audio_sent_by(arrival), covered))
    return samples


def caption_ends(recorded: Replay, speaker: str | None = None) -> list[tuple[float, float]]:
    """``(arrival, end)`` of every source caption the presenter received, in order; of a
    panel, only those of ``speaker`` (an id: each speaker's console receives everyone's; a
    session of one speaker labels none)."""
    return [
        (r.arrival, float(m["end"]))
        for r in recorded.received
        if (m := r.message).get("type") == "caption"
        and m.get("source", True)
        and (speaker is None or (m.get("speaker") or {}).get("id", speaker) == speaker)
    ]


def server_lags(recorded: Replay) -> list[float]:
    """The ``{"type": "lag"}`` reports the presenter got that said it was behind (engine/lag.py;
    the reports of 0, caught up, left out)."""
    return [
        seconds
        for r in recorded.received
        if r.message.get("type") == "lag" and (seconds := float(r.message["seconds"])) > 0
    ]


def server_lag_max(recorded: Replay) -> float | None:
    """The largest lag the server reported, ``None`` if it never said the stream was behind."""
    return max(server_lags(recorded), default=None)


@dataclass(frozen=True, slots=True)
class PresenterLag:
    """One presenter of one round."""

    recording: str
    audio_s: float
    samples: tuple[LagSample, ...] = ()
    end_lag_s: float | None = None
    """``ended`` arrival − send time of the last chunk."""
    server_lag_max_s: float | None = None
    """The largest lag the server reported to the presenter (None: it never said behind)."""
    server_lag_reports: int = 0
    """How many times the server told the presenter it was behind (the console's "captions
    N s behind")."""
    error: str | None = None
    """Why the replay did not complete (the round then fails)."""
    shed_share: float = 0.0
    """Share of the replay (first chunk sent to ``ended``) during which its stream shed
    something, from the ``shedding`` events it received (engine/recognition/shedding.py)."""
    natural_chunks: int = 0
    fast_chunks: int = 0
    """Audio chunks its speech listener received, by kind of voice (``--speech``)."""

    @property
    def lag(self) -> Distribution:
        return distribution(s.lag for s in self.samples)

    def passed(self, limit_s: float) -> bool:
        """Completed, captioned, and its lag stayed under ``limit_s`` at every sample."""
        return (
            self.error is None and bool(self.samples) and all(s.lag < limit_s for s in self.samples)
        )


def shed_share(recorded: Replay) -> float:
    """Share of the replay, from its first chunk sent to ``ended``, during which the
    ``shedding`` events it received said a level above 0."""
    began, ended = recorded.schedule.send_times[0], recorded.ended_at
    level, since, shed = 0, began, 0.0
    for r in recorded.received:
        if r.message.get("type") != "shedding":
            continue
        if level > 0:
            shed += r.arrival - since
        level, since = int(r.message["level"]), r.arrival
    if level > 0:
        shed += ended - since
    return shed / (ended - began) if ended > began else 0.0


def measure_presenter(
    recording: Recording, recorded: Replay, speaker: str | None = None
) -> PresenterLag:
    """Lag metrics of one completed replay (pure); of a panel, of ``speaker``'s captions."""
    told = server_lags(recorded)
    return PresenterLag(
        recording=recording.id,
        audio_s=recording.duration,
        samples=tuple(lag_series(recorded.schedule, caption_ends(recorded, speaker))),
        end_lag_s=recorded.ended_at - recorded.schedule.send_times[-1],
        server_lag_max_s=max(told, default=None),
        server_lag_reports=len(told),
        shed_share=shed_share(recorded),
    )


@dataclass(frozen=True, slots=True)
class CapacityRound:
    """N presenters at once."""

    presenters: tuple[PresenterLag, ...]
    cpu: CpuUse
    rss_start_bytes: int | None
    rss_peak_bytes: int | None
    load_average_before: tuple[float, float, float]
    load_average_after: tuple[float, float, float]

    @property
    def size(self) -> int:
        return len(self.presenters)

    @property
    def lag(self) -> Distribution:
        """Over every sample of every presenter."""
        return distribution(s.lag for p in self.presenters for s in p.samples)

    def passed(self, limit_s: float) -> bool:
        return all(p.passed(limit_s) for p in self.presenters)


def capacity_of(rounds: Sequence[CapacityRound], limit_s: float) -> int:
    """The largest N such that rounds 1..N all passed (0 if the first failed)."""
    best = 0
    for run in sorted(rounds, key=lambda r: r.size):
        if run.size != best + 1 or not run.passed(limit_s):
            break
        best = run.size
    return best


@dataclass(frozen=True, slots=True)
class CapacitySettings:
    """What ``python -m bench capacity`` was asked to do."""

    max_presenters: int
    wavs: tuple[Path, ...]
    out: Path
    seconds: float | None = None
    lag_limit_s: float = LAG_LIMIT_S
    url: str | None = None
    server_pid: int | None = None
    ready_timeout: float = 120.0
    speech: str | None = None
    """A language the first presenter's session offers, with one listener hearing it."""
    panel: bool = False
    """The presenters are the speakers of one session."""

    @property
    def name(self) -> str:
        if self.panel:
            return "capacity-panel"
        return "capacity" if self.speech is None else "capacity-speech"


async def _present(base_url: str, recording: Recording, speech: str | None) -> PresenterLag:
    if speech is None:
        try:
            recorded = await replay(base_url, recording, "realtime")
        except ReplayError as error:
            return PresenterLag(recording.id, recording.duration, error=str(error))
        return measure_presenter(recording, recorded)
    return await _present_with_listener(base_url, recording, speech)


async def _present_with_listener(base_url: str, recording: Recording, lang: str) -> PresenterLag:
    """A session offering ``lang``, one listener hearing it, the recording in real time."""
    try:
        recorded, log = await present_to_listener(
            base_url, recording, lang, f"bench {recording.id}"
        )
    except ReplayError as error:
        return PresenterLag(recording.id, recording.duration, error=str(error))
    kinds = [str(h.get("voice", "")) for _, h, _ in log.chunks]
    return replace(
        measure_presenter(recording, recorded),
        natural_chunks=kinds.count("natural"),
        fast_chunks=kinds.count("fast"),
    )


async def _panel(base_url: str, recordings: Sequence[Recording]) -> list[PresenterLag]:
    """One session; its presenter and ``len(recordings) - 1`` speakers it adds replay the
    recordings at once, in real time, each measured on their own captions."""
    try:
        session = await create_session(base_url, f"bench panel of {len(recordings)}")
        speakers: list[tuple[str, str]] = [("presenter", session["presenter_token"])]
        for k in range(1, len(recordings)):
            added = await add_speaker(base_url, session, f"Speaker {k + 1}", "en")
            speakers.append((added["id"], added["token"]))
    except ReplayError as error:
        return [PresenterLag(r.id, r.duration, error=str(error)) for r in recordings]

    async def one(recording: Recording, speaker: str, token: str) -> PresenterLag:
        try:
            recorded = await present(
                base_url, {**session, "presenter_token": token}, recording, mode="realtime"
            )
        except ReplayError as error:
            return PresenterLag(recording.id, recording.duration, error=str(error))
        return measure_presenter(recording, recorded, speaker)

    return list(
        await asyncio.gather(
            *(one(r, who, token) for r, (who, token) in zip(recordings, speakers, strict=True))
        )
    )


async def run_round(
    recordings: Sequence[Recording],
    server: ServerHandle,
    speech: str | None = None,
    panel: bool = False,
) -> CapacityRound:
    """Replay every recording at once, each to its own session (or, ``panel``, each by a
    speaker of one session), in real time."""
    load_before = os.getloadavg()
    async with RssSampler(server.pid) as rss:
        before = cpu_snapshot(server.pid, [])
        if panel:
            presenters = await _panel(server.base_url, recordings)
        else:
            presenters = await asyncio.gather(
                *(
                    _present(server.base_url, r, speech if k == 0 else None)
                    for k, r in enumerate(recordings)
                )
            )
        cpu = cpu_use(before, cpu_snapshot(server.pid, []))
    return CapacityRound(
        presenters=tuple(presenters),
        cpu=cpu,
        rss_start_bytes=rss.start_bytes,
        rss_peak_bytes=rss.peak_bytes,
        load_average_before=load_before,
        load_average_after=os.getloadavg(),
    )


def presenter_recordings(recordings: Sequence[Recording], count: int) -> list[Recording]:
    """Presenter ``k`` replays recording ``k`` (cycling when there are fewer recordings)."""
    return [recordings[k % len(recordings)] for k in range(count)]


async def run_capacity(settings: CapacitySettings) -> list[CapacityRound]:
    """Rounds 1..max against one server, stopping after the first that fails."""
    recordings = [trimmed(load_recording(w), settings.seconds) for w in settings.wavs]
    rounds: list[CapacityRound] = []
    log_path = settings.out / f"server-{settings.name}.log"
    async with server_under_test(
        settings.url, settings.server_pid, log_path, settings.ready_timeout
    ) as server:
        for count in range(1, settings.max_presenters + 1):
            run = await run_round(
                presenter_recordings(recordings, count), server, settings.speech, settings.panel
            )
            rounds.append(run)
            if not run.passed(settings.lag_limit_s):
                break
    return rounds


# --- the report ---------------------------------------------------------------------------


SERIES_COLUMNS = ["at_s", "sent_s", "covered_s"]
"""The columns of :func:`series_json`'s rows."""


def series_json(samples: Iterable[LagSample]) -> list[list[float]]:
    """Lag samples as rows of :data:`SERIES_COLUMNS`, rounded to the millisecond."""
    return [[round(s.at, 3), round(s.sent, 3), round(s.covered, 3)] for s in samples]


def presenter_json(presenter: PresenterLag, limit_s: float) -> dict[str, Any]:
    """One presenter's lag: statistics and the whole series."""
    return {
        "recording": presenter.recording,
        "audio_s": presenter.audio_s,
        "lag_s": asdict(presenter.lag),
        "end_lag_s": presenter.end_lag_s,
        "server_lag_max_s": presenter.server_lag_max_s,
        "server_lag_reports": presenter.server_lag_reports,
        "passed": presenter.passed(limit_s),
        "error": presenter.error,
        "shed_share": presenter.shed_share,
        "natural_chunks": presenter.natural_chunks,
        "fast_chunks": presenter.fast_chunks,
        "series": series_json(presenter.samples),
    }


def round_json(run: CapacityRound, limit_s: float) -> dict[str, Any]:
    """One round: lag over all presenters, pass or fail, server resources."""
    return {
        "presenters": run.size,
        "passed": run.passed(limit_s),
        "lag_s": asdict(run.lag),
        "server": {
            "cpu_cores": run.cpu.server,
            "rss_start_mib": mib(run.rss_start_bytes),
            "rss_peak_mib": mib(run.rss_peak_bytes),
        },
        "machine": {
            "busy_cores": run.cpu.machine,
            "other_cores": run.cpu.other,
            "load_average_before": [round(x, 2) for x in run.load_average_before],
            "load_average_after": [round(x, 2) for x in run.load_average_after],
        },
        "wall_s": run.cpu.wall_s,
        "per_presenter": [presenter_json(p, limit_s) for p in run.presenters],
    }


def report_json(
    rounds: Sequence[CapacityRound], settings: CapacitySettings, command: str
) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    return {
        "benchmark": "capacity",
        "command": command,
        "created_utc": utc_now(),
        "machine": machine_info(),
        "server": {"url": settings.url, "started_by_bench": settings.url is None},
        "recordings": [w.stem for w in settings.wavs],
        "speech": settings.speech,
        "trimmed_to_s": settings.seconds,
        "lag_limit_s": settings.lag_limit_s,
        "max_presenters": settings.max_presenters,
        "capacity": capacity_of(rounds, settings.lag_limit_s),
        "series_columns": SERIES_COLUMNS,
        "rounds": [round_json(r, settings.lag_limit_s) for r in rounds],
    }


def report_markdown(report: dict[str, Any], plot: Path | None) -> str:
    """The report's tables in Markdown."""
    machine, limit = report["machine"], report["lag_limit_s"]
    tried = len(report["rounds"])
    lines = [
        "# Capacity benchmark: simultaneous real-time presenters",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine_line(machine)}",
        f"- Date (UTC): {report['created_utc']}",
        f"- **Capacity: {report['capacity']} presenter(s)** whose caption lag stays under "
        f"{limit} s (tried up to {report['max_presenters']}; rounds stop at the first that "
        f"fails; {tried} run)",
        *(
            [
                f"- The first presenter's session offers `{report['speech']}` and has one "
                "listener hearing it (audio on); its audio chunks by voice below"
            ]
            if report.get("speech")
            else []
        ),
        "",
        "| presenters | lag p50 / p95 / max s | end lag max s | server CPU cores "
        "| server RSS peak MiB | other load cores | load average before | passed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rounds"]:
        lag = r["lag_s"]
        end_lags = [p["end_lag_s"] for p in r["per_presenter"] if p["end_lag_s"] is not None]
        lines.append(
            f"| {r['presenters']} "
            f"| {fixed(lag['p50'])} / {fixed(lag['p95'])} / {fixed(lag['max'])} "
            f"| {fixed(max(end_lags, default=None))} | {fixed(r['server']['cpu_cores'])} "
            f"| {fixed(r['server']['rss_peak_mib'], 0)} | {fixed(r['machine']['other_cores'])} "
            f"| {slashed(r['machine']['load_average_before'])} "
            f"| {'yes' if r['passed'] else '**no**'} |"
        )
    lines += [
        "",
        "## Per presenter",
        "",
        "| presenters | recording | audio s | lag p50 / p95 / max s | end lag s "
        "| shedding, share of the replay | told it is behind: times, max s "
        "| speech chunks natural / fast | passed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rounds"]:
        for p in r["per_presenter"]:
            lag = p["lag_s"]
            verdict = "yes" if p["passed"] else f"**no**{': ' + p['error'] if p['error'] else ''}"
            lines.append(
                f"| {r['presenters']} | {p['recording']} | {fixed(p['audio_s'], 1)} "
                f"| {fixed(lag['p50'])} / {fixed(lag['p95'])} / {fixed(lag['max'])} "
                f"| {fixed(p['end_lag_s'])} | {fixed(p.get('shed_share', 0.0))} "
                f"| {p.get('server_lag_reports', 0)}, {fixed(p.get('server_lag_max_s'))} "
                f"| {p.get('natural_chunks', 0)} / {p.get('fast_chunks', 0)} | {verdict} |"
            )
    lines += [
        "",
        "Lag = audio seconds sent − the largest caption `end` received, sampled at every "
        "source caption's arrival (docs/metrics.md). CPU in cores = CPU seconds per wall "
        'second over the round; "other load" is busy CPU not used by the server or the '
        "bench (other work on the machine).",
    ]
    if plot is not None:
        lines += ["", f"![lag over time]({plot.name})"]
    lines.append("")
    return "\n".join(lines)


def plot_lag(rounds: Sequence[CapacityRound], limit_s: float, path: Path) -> Path:
    """Lag over time, one panel per round, one line per presenter; saved as PNG."""
    plt = pyplot()
    figure, axes = plt.subplots(
        len(rounds), 1, figsize=(9, 2.6 * len(rounds)), sharex=True, squeeze=False
    )
    for ax, run in zip(axes[:, 0], rounds, strict=True):
        for k, presenter in enumerate(run.presenters):
            ax.plot(
                [s.at for s in presenter.samples],
                [s.lag for s in presenter.samples],
                label=f"{k + 1}: {presenter.recording}",
                linewidth=1.2,
            )
        ax.axhline(limit_s, color="red", linestyle="--", linewidth=1)
        verdict = "passed" if run.passed(limit_s) else "failed"
        ax.set_title(f"{run.size} presenter(s) at once: {verdict}", fontsize=10)
        ax.set_ylabel("lag (s)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("seconds since the presenter's first audio")
    return save_figure(figure, path)


def write_report(
    rounds: Sequence[CapacityRound], settings: CapacitySettings, command: str
) -> tuple[list[Path], str]:
    """Write ``capacity.json``, ``capacity.md`` and ``capacity.png`` into ``settings.out``."""
    settings.out.mkdir(parents=True, exist_ok=True)
    report = report_json(rounds, settings, command)
    plot = plot_lag(rounds, settings.lag_limit_s, settings.out / f"{settings.name}.png")
    markdown = report_markdown(report, plot)
    json_path, md_path = write_report_files(settings.out, settings.name, report, markdown)
    return [json_path, md_path, plot], markdown


# --- the command line -----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench capacity", description=__doc__)
    server_arguments(parser)
    parser.add_argument(
        "--max",
        type=int,
        default=DEFAULT_MAX,
        help="most presenters to try; rounds go 1, 2, ... and stop at the first that fails "
        "(default: %(default)s, the server's max_live_streams)",
    )
    parser.add_argument(
        "--files",
        nargs="+",
        metavar="FILE",
        help="recordings the presenters replay, presenter k the k-th (cycling); default: "
        "every English long-form recording except *_SILVER and the *_concat file",
    )
    parser.add_argument(
        "--seconds", type=float, help="replay only the first SECONDS of each recording"
    )
    parser.add_argument(
        "--lag-limit",
        type=float,
        default=LAG_LIMIT_S,
        help="a round passes when every presenter's lag stays under this (default: %(default)s)",
    )
    parser.add_argument(
        "--speech",
        metavar="LANG",
        help="the first presenter's session also offers LANG, with one listener hearing it",
    )
    parser.add_argument(
        "--panel",
        action="store_true",
        help="the presenters of a round are the speakers of one session (a panel)",
    )
    parser.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser


def main(argv: Sequence[str]) -> int:
    """``python -m bench capacity [options]``: every round, the report written and printed."""
    args = build_parser().parse_args(argv)
    wavs = resolve_wavs(args.files, args.eval_dir) if args.files else default_wavs(args.eval_dir)
    if not wavs:
        print(f"no recordings found in {args.eval_dir}", file=sys.stderr)
        return 2
    settings = CapacitySettings(
        max_presenters=args.max,
        wavs=tuple(wavs),
        out=args.out,
        seconds=args.seconds,
        lag_limit_s=args.lag_limit,
        url=args.url,
        server_pid=args.server_pid,
        ready_timeout=args.ready_timeout,
        speech=args.speech,
        panel=args.panel,
    )
    if settings.panel and settings.speech:
        print("--panel and --speech are separate rounds: give one", file=sys.stderr)
        return 2
    rounds = asyncio.run(run_capacity(settings))
    paths, markdown = write_report(
        rounds, settings, shlex.join(["python", "-m", "bench", "capacity", *argv])
    )
    print(markdown)
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0
