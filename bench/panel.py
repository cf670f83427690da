"""``python -m bench panel``: two speakers in two languages streaming at once into one session.

A talk of English FLEURS clips and one of Spanish clips (``../shared/eval/fleurs_st``, one
second of silence between clips) are streamed in real time: first each alone, in a session
of its own, then both at once by two speakers of one session, with an English and a Spanish
listener. Reported (docs/metrics.md, "Panels"):

- every final of both speakers at both listeners labelled with the right speaker, each
  speaker's words in their own language, and every source final covered by a translation
  final in the other language;
- WER per speaker together against alone (goal <= 1.1x);
- caption lag per speaker (the audio sent minus the audio its captions cover, at each of its
  captions; goal p95 <= 2 s), and its speech lag (the same, counting only speech: silence
  after the last caption is not lag; bench/speech_spans.py);
- from a moderator accepting a question to its caption at the listeners.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import websockets

from bench.alignment import word_errors
from bench.capacity import LAG_LIMIT_S, SERIES_COLUMNS, LagSample, lag_series, series_json
from bench.format import fixed, machine_line, utc_now, write_report_files
from bench.metrics import distribution
from bench.paths import RESULTS
from bench.recordings import Recording
from bench.replay import Replay, add_speaker, present
from bench.resources import machine_info
from bench.server import server_arguments, server_under_test
from bench.speech_spans import Spans, speech_spans, unshown_speech
from bench.textnorm import normalise_words
from bench.translation import FleursClip, build_talk, fleurs_clips

WER_GOAL = 1.1
LAG_GOAL_S = 2.0
QUESTION = {"lang": "es", "text": "¿Cuántas personas trabajan en el proyecto?"}


@dataclass(frozen=True, slots=True)
class Talk:
    speaker: str
    lang: str
    recording: Recording
    reference: str
    speech: Spans
    """Where the talk has speech (seconds)."""


@dataclass(frozen=True, slots=True)
class Alone:
    """One talk streamed alone, in a session of its own: the yardstick of the panel."""

    wer: float
    lag_p95_s: float | None
    speech_lag_p95_s: float | None


def talk(lang: str, clips: int) -> Talk:
    chosen: list[FleursClip] = [c for c in fleurs_clips() if c.lang == lang][:clips]
    recording, _ = build_talk(f"panel-{lang}", chosen)
    reference = " ".join(c.references[lang] for c in chosen)
    speech = speech_spans(recording.pcm, recording.sample_rate)
    return Talk("", lang, recording, reference, speech)


def own_finals(replay: Replay, speaker: str | None) -> list[dict[str, Any]]:
    """The source finals of ``speaker`` (None: unlabelled, a session of one) the presenter's
    own socket received, in arrival order."""
    out = []
    for received in replay.received:
        m = received.message
        if m.get("type") != "caption" or not m.get("source") or m.get("state") != "final":
            continue
        who = (m.get("speaker") or {}).get("id")
        if speaker is None or who == speaker:
            out.append(m)
    return out


def wer(talk: Talk, finals: Sequence[Mapping[str, Any]]) -> float:
    text = " ".join(str(m["text"]) for m in finals)
    return word_errors(
        normalise_words(talk.reference, talk.lang), normalise_words(text, talk.lang)
    ).wer


def lag(replay: Replay, speaker: str | None) -> list[LagSample]:
    """The lag of ``speaker``'s source captions (None: every one, a session of one)."""
    captions = [
        (r.arrival, float(r.message["end"]))
        for r in replay.received
        if r.message.get("type") == "caption"
        and r.message.get("source")
        and (speaker is None or (r.message.get("speaker") or {}).get("id") == speaker)
    ]
    return lag_series(replay.schedule, captions)


def speech_lags(talk: Talk, samples: Sequence[LagSample]) -> list[float]:
    """The speech lag at each of ``samples`` (module docstring)."""
    return [unshown_speech(s.sent, s.covered, talk.speech) for s in samples]


async def _listen(
    url: str, events: list[tuple[float, dict[str, Any]]], stop: asyncio.Event
) -> None:
    async with websockets.connect(url, max_size=2**22) as ws:
        while not stop.is_set():
            try:
                message = await asyncio.wait_for(ws.recv(), 0.3)
            except TimeoutError:
                continue
            if isinstance(message, str):
                events.append((time.monotonic(), json.loads(message)))


async def _session(client: httpx.AsyncClient, title: str) -> dict[str, Any]:
    response = await client.post(
        "/api/sessions",
        json={"title": title, "source_language": "en", "target_languages": ["es"]},
    )
    response.raise_for_status()
    data: dict[str, Any] = response.json()
    return data


async def run(base_url: str, english: Talk, spanish: Talk) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        # Alone: each talk in a session of its own (the Spanish one by its speaker).
        alone: dict[str, Alone] = {}
        for item in (english, spanish):
            session = await _session(client, f"alone {item.lang}")
            token = session["presenter_token"]
            if item.lang == "es":
                token = (await add_speaker(base_url, session, "Ana", "es"))["token"]
            replay = await present(
                base_url,
                {**session, "presenter_token": token},
                item.recording,
                language=item.lang,
            )
            samples = lag(replay, None)
            alone[item.lang] = Alone(
                wer(item, [m for m in own_finals(replay, None) if m["lang"] == item.lang]),
                distribution(s.lag for s in samples).p95,
                distribution(speech_lags(item, samples)).p95,
            )
        # Together: one session, two speakers, two listeners.
        session = await _session(client, "panel")
        ana = await add_speaker(base_url, session, "Ana", "es")
        base = base_url.replace("http://", "ws://") + f"/ws/listen/{session['code']}"
        heard: dict[str, list[tuple[float, dict[str, Any]]]] = {"en": [], "es": []}
        stop = asyncio.Event()
        listeners = [
            asyncio.create_task(_listen(f"{base}?lang={lang}", heard[lang], stop)) for lang in heard
        ]
        await asyncio.sleep(0.5)
        replays = await asyncio.gather(
            present(base_url, session, english.recording, language="en"),
            present(
                base_url,
                {**session, "presenter_token": ana["token"]},
                spanish.recording,
                language="es",
            ),
        )
        speakers = {"presenter": (english, replays[0]), ana["id"]: (spanish, replays[1])}
        # A question from the floor, accepted by the moderator.
        asked = await client.post(f"/api/sessions/{session['code']}/questions", json=QUESTION)
        asked.raise_for_status()
        accept_at = time.monotonic()
        accepted = await client.post(
            f"/api/sessions/{session['code']}/questions/{asked.json()['id']}/accept",
            headers={"Authorization": f"Bearer {session['presenter_token']}"},
        )
        accepted.raise_for_status()
        await asyncio.sleep(8.0)
        stop.set()
        await asyncio.gather(*listeners)
    return summarise(speakers, alone, heard, accept_at)


def summarise(
    speakers: Mapping[str, tuple[Talk, Replay]],
    alone: Mapping[str, Alone],
    heard: Mapping[str, list[tuple[float, dict[str, Any]]]],
    accept_at: float,
) -> dict[str, Any]:
    rows = []
    for speaker, (item, replay) in speakers.items():
        finals = own_finals(replay, speaker)
        samples = lag(replay, speaker)
        together = wer(item, finals)
        lag_dist = distribution(s.lag for s in samples)
        speech_dist = distribution(speech_lags(item, samples))
        said = {int(m["segment"]) for m in finals if m["text"]}
        other = "es" if item.lang == "en" else "en"
        translated = {
            int(s)
            for _, m in heard[other]
            if m.get("type") == "caption"
            and m.get("state") == "final"
            and not m.get("source")
            and m.get("lang") == other
            and (m.get("speaker") or {}).get("id") == speaker
            for s in m.get("sources") or [m["segment"]]
        }
        solo = alone[item.lang]
        rows.append(
            {
                "speaker": speaker,
                "lang": item.lang,
                "audio_s": round(item.recording.duration, 1),
                "wer_alone": round(solo.wer, 3),
                "wer_together": round(together, 3),
                "wer_ratio": round(together / solo.wer, 2) if solo.wer else None,
                "lag_p95_alone_s": solo.lag_p95_s,
                "lag_p50_s": lag_dist.p50,
                "lag_p95_s": lag_dist.p95,
                "lag_max_s": lag_dist.max,
                "speech_lag_p95_alone_s": solo.speech_lag_p95_s,
                "speech_lag_p50_s": speech_dist.p50,
                "speech_lag_p95_s": speech_dist.p95,
                "speech_lag_max_s": speech_dist.max,
                "finals": len(said),
                "finals_translated": len(said & translated),
                "lag_series": series_json(samples),
            }
        )
    labels = 0
    wrong = []
    for lang, events in heard.items():
        for _, m in events:
            if m.get("type") != "caption" or m.get("state") != "final":
                continue
            labels += 1
            who = (m.get("speaker") or {}).get("id")
            if who == "audience":
                continue
            expected = speakers.get(who or "")
            if expected is None or (m["source"] and m["lang"] != expected[0].lang):
                wrong.append({"listener": lang, "segment": m["segment"], "speaker": who})
    question = {}
    for lang, events in heard.items():
        arrivals = [
            at - accept_at
            for at, m in events
            if m.get("type") == "caption"
            and m.get("state") == "final"
            and (m.get("speaker") or {}).get("id") == "audience"
            and m.get("lang") == lang
        ]
        question[lang] = round(min(arrivals), 3) if arrivals else None
    return {
        "speakers": rows,
        "finals_heard": labels,
        "wrongly_labelled": wrong,
        "question_caption_s": question,
    }


def markdown(report: Mapping[str, Any]) -> str:
    lines = [
        "# Panel benchmark",
        "",
        f"{report['created_utc']}; `{report['command']}`; {machine_line(report['machine'])}.",
        "",
        "| speaker | language | audio s | WER alone | WER together | ratio (goal <= 1.1) | "
        "lag p50 / p95 / max s (goal p95 <= 2) | lag p95 alone s | "
        "speech lag p50 / p95 / max s | speech lag p95 alone s | finals translated |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["speakers"]:
        lines.append(
            f"| {row['speaker']} | {row['lang']} | {row['audio_s']} | {row['wer_alone']} | "
            f"{row['wer_together']} | {row['wer_ratio']} | "
            f"{' / '.join(fixed(row[k]) for k in ('lag_p50_s', 'lag_p95_s', 'lag_max_s'))} | "
            f"{fixed(row['lag_p95_alone_s'])} | "
            + " / ".join(fixed(row[f"speech_lag_{k}_s"]) for k in ("p50", "p95", "max"))
            + f" | {fixed(row['speech_lag_p95_alone_s'])} | "
            f"{row['finals_translated']} of {row['finals']} |"
        )
    lines += [
        "",
        f"- Finals heard by the two listeners: {report['finals_heard']}; wrongly labelled: "
        f"{len(report['wrongly_labelled'])}.",
        "- From accepting a question to its caption: "
        + ", ".join(f"{lang} {s} s" for lang, s in report["question_caption_s"].items()),
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench panel", description=__doc__)
    parser.add_argument("--clips", type=int, default=6, help="FLEURS clips per talk")
    parser.add_argument("--out", type=Path, default=RESULTS)
    server_arguments(parser)
    args = parser.parse_args(argv)
    english, spanish = talk("en", args.clips), talk("es", args.clips)

    async def go() -> dict[str, Any]:
        async with server_under_test(
            args.url,
            args.server_pid,
            args.out / "server-panel.log",
            args.ready_timeout,
            env={"INTERP_SESSION_RATE": "0"},
        ) as server:
            return await run(server.base_url, english, spanish)

    result = asyncio.run(go())
    report = {
        "benchmark": "panel",
        "created_utc": utc_now(),
        "command": "python -m bench panel " + shlex.join(argv),
        "machine": machine_info(),
        "lag_limit_s": LAG_LIMIT_S,
        "lag_series_columns": SERIES_COLUMNS,
        **result,
    }
    text = markdown(report)
    print(text)
    write_report_files(args.out, "panel", report, text)
    ok = all(
        (row["wer_ratio"] or 0) <= WER_GOAL and (row["lag_p95_s"] or 0) <= LAG_GOAL_S
        for row in report["speakers"]
    )
    return 0 if ok and not report["wrongly_labelled"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
