"""The peer comparison: WhisperLiveKit's messages mapped to caption events (hand-made message
sequences, no server), the replay record built from them and measured by the bench's own
metrics, and one short real replay to WhisperLiveKit when ``.venv-peer`` has it installed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from bench.alignment import TimedWord
from bench.captions import measure_file
from bench.metrics import (
    CaptionUpdate,
    SendSchedule,
    erasure,
    final_words,
    transcript_snapshots,
)
from bench.peer_mapping import (
    PeerProtocolError,
    PeerSnapshot,
    caption_messages,
    caption_updates,
    display_erasure,
    display_updates,
    parse_snapshot,
)
from bench.peer_replay import replay_peer, to_replay, ws_url
from bench.peer_report import write_peer_report
from bench.peer_run import Load, PeerRunSettings, SystemRun, with_display_erasure
from bench.peer_server import (
    OFFLINE_ENV,
    PeerServer,
    PeerSettings,
    peer_installed,
    write_warmup_wav,
)
from bench.recordings import Recording, load_recording
from bench.reference import DecodeSettings, OfflineDecode, whisper_model_dir
from bench.replay import Received
from bench.server import cpu_seconds
from bench.textnorm import normalise_words
from tests.data import SONNET as SONNET_WAV


def message(committed: list[str | None], buffer: str = "", **extra: Any) -> dict[str, Any]:
    """A WhisperLiveKit ``mode=full`` message; ``None`` in ``committed`` is a silence line."""
    lines = [
        {"speaker": -2 if text is None else 1, "text": text, "start": "0:00:00.00", "end": "0"}
        for text in committed
    ]
    return {
        "status": "active_transcription",
        "lines": lines,
        "buffer_transcription": buffer,
        "buffer_diarization": "",
        "buffer_translation": "",
        "remaining_time_transcription": extra.get("remaining", 0.0),
        "remaining_time_diarization": 0,
    }


# (arrival, committed lines, buffer): a buffer that grows, is partly committed, is revised.
SONNET: list[tuple[float, list[str | None], str]] = [
    (1.0, [], "Shall I"),
    (1.5, [], "Shall I compare"),
    (1.6, [], "Shall I compare"),  # only WhisperLiveKit's timing fields changed
    (2.0, [" Shall I"], "compare the"),
    (2.5, [" Shall I compare thee"], "to a summer"),
    (3.0, [" Shall I compare thee", None, "to a"], "summer day?"),
    (3.5, [" Shall I compare thee", None, "to a summer day?"], ""),
]


def snapshots(rows: list[tuple[float, list[str | None], str]]) -> list[PeerSnapshot]:
    out = []
    for arrival, committed, buffer in rows:
        snap = parse_snapshot(arrival, message(committed, buffer, remaining=arrival))
        assert snap is not None
        out.append(snap)
    return out


def test_parse_snapshot_joins_committed_lines_and_skips_silence() -> None:
    snap = parse_snapshot(2.0, message([" 1. From fairest", None, "creatures"], " we desire "))
    assert snap == PeerSnapshot(2.0, "1. From fairest creatures", "we desire")


def test_parse_snapshot_ignores_control_messages_and_raises_on_errors() -> None:
    assert parse_snapshot(0.1, {"type": "config", "useAudioWorklet": True, "mode": "full"}) is None
    assert parse_snapshot(9.0, {"type": "ready_to_stop"}) is None
    with pytest.raises(PeerProtocolError, match="FFmpeg error"):
        parse_snapshot(1.0, {"status": "error", "error": "FFmpeg error: gone", "lines": []})
    with pytest.raises(PeerProtocolError, match="unsupported language"):
        parse_snapshot(1.0, {"type": "error", "error": "unsupported language"})


def test_caption_updates_finalise_committed_words_and_draft_the_buffer() -> None:
    mapped = caption_updates(snapshots(SONNET))
    assert mapped.updates == (
        CaptionUpdate(1.0, 0, "draft", "shall i"),
        CaptionUpdate(1.5, 0, "draft", "shall i compare"),
        CaptionUpdate(2.0, 0, "final", "shall i"),
        CaptionUpdate(2.0, 1, "draft", "compare the"),
        CaptionUpdate(2.5, 1, "final", "compare thee"),
        CaptionUpdate(2.5, 2, "draft", "to a summer"),
        CaptionUpdate(3.0, 2, "final", "to a"),
        CaptionUpdate(3.0, 3, "draft", "summer day"),
        CaptionUpdate(3.5, 3, "final", "summer day"),
    )
    assert mapped.rewrites == 0
    assert mapped.uncommitted_words == 0


def test_displayed_and_final_transcripts_equal_what_whisperlivekit_showed() -> None:
    snaps = snapshots(SONNET)
    shown = transcript_snapshots(caption_updates(snaps).updates)
    last_per_arrival = {s.arrival: s for s in shown}
    for snap in snaps:
        if snap.arrival == 1.6:
            continue  # made no event
        state = last_per_arrival[snap.arrival]
        assert state.displayed == (*normalise_words(snap.committed), *normalise_words(snap.buffer))
        assert state.finals == tuple(normalise_words(snap.committed))
    assert final_words(caption_updates(snaps).updates) == normalise_words(
        "Shall I compare thee to a summer day"
    )


def test_committed_words_that_change_are_counted_as_rewrites() -> None:
    rows: list[tuple[float, list[str | None], str]] = [
        (1.0, ["The cat"], ""),
        (2.0, ["The cap sat"], "down"),
        (3.0, ["The cap sat down"], "on the"),
    ]
    mapped = caption_updates(snapshots(rows))
    assert [u.text for u in mapped.updates if u.state == "final"] == ["the cat", "sat", "down"]
    assert mapped.rewrites == 1
    assert mapped.uncommitted_words == 2


def test_display_erasure_counts_only_words_taken_off_the_screen() -> None:
    updates = caption_updates(snapshots(SONNET)).updates
    # On screen: "... compare the" became "... compare thee": one word retracted, 8 kept.
    assert display_erasure(updates).retracted_words == 1
    assert display_erasure(updates).final_words == 8
    # Segment-wise, every commit that took only part of the buffer looks like a retraction.
    assert erasure(updates).retracted_words == 3


def test_display_updates_merge_events_of_one_instant() -> None:
    updates = [
        CaptionUpdate(1.0, 0, "draft", "a b c"),
        CaptionUpdate(2.0, 0, "final", "a"),
        CaptionUpdate(2.0, 1, "draft", "b c d"),
        CaptionUpdate(3.0, 1, "final", "b c d"),
    ]
    assert display_updates(updates) == [
        CaptionUpdate(1.0, 0, "draft", "a b c"),
        CaptionUpdate(2.0, 0, "draft", "a b c d"),
        CaptionUpdate(3.0, 0, "final", "a b c d"),
    ]
    assert display_updates([]) == []


def test_uncommitted_words_at_the_end_count_as_erased() -> None:
    updates = [CaptionUpdate(1.0, 0, "draft", "a b"), CaptionUpdate(2.0, 0, "final", "a")]
    assert display_erasure(updates).retracted_words == 1
    assert display_erasure(updates).final_words == 1


def test_caption_messages_follow_our_protocol() -> None:
    (event,) = caption_messages([CaptionUpdate(1.0, 4, "final", "shall i")])
    assert event == {
        "type": "caption",
        "segment": 4,
        "lang": "en",
        "source": True,
        "state": "final",
        "text": "shall i",
    }


def small_recording(seconds: float = 1.0) -> Recording:
    samples = round(seconds * 16000)
    return Recording("tiny", Path("tiny.wav"), "Shall I compare thee", 16000, bytes(2 * samples))


def test_to_replay_is_measured_by_the_bench_metrics() -> None:
    recording = small_recording()
    # Ten 100 ms chunks sent at 100.1, 100.2, ..., 101.0.
    schedule = SendSchedule(
        16000, tuple(1600 * (k + 1) for k in range(10)), tuple(100.1 + 0.1 * k for k in range(10))
    )
    raw = [
        Received(100.0, {"type": "config", "useAudioWorklet": True, "mode": "full"}),
        Received(100.9, message([], "Shall I")),
        Received(101.4, message([" Shall I"], "compare thee")),
        Received(101.8, message([" Shall I compare thee"], "")),
        Received(101.9, {"type": "ready_to_stop"}),
    ]
    times = {"connected": 99.9, "ready": 100.0, "stop_sent": 101.0, "ended": 101.9}
    peer = to_replay(recording, schedule, raw, times, cpu_seconds=0.5)
    assert peer.raw == tuple(raw)
    assert peer.replay.received[-1] == Received(101.9, {"type": "ended"})
    assert tuple(peer.replay.caption_updates()) == peer.mapped.updates

    reference = (
        TimedWord("shall", 0.05, 0.25),  # its end is in chunk 2, sent at 100.3
        TimedWord("i", 0.25, 0.45),  # chunk 4, sent at 100.5
        TimedWord("compare", 0.45, 0.65),  # chunk 6, sent at 100.7
        TimedWord("thee", 0.65, 0.85),  # chunk 8, sent at 100.9
    )
    offline = OfflineDecode("tiny", DecodeSettings(), "Shall I compare thee", (), 1.0)
    result = measure_file(recording, reference, offline, peer.replay)
    assert result.latencies.shown == pytest.approx((0.6, 0.4, 0.7, 0.5))
    assert result.latencies.final == pytest.approx((1.1, 0.9, 1.1, 0.9))
    assert result.errors.wer == 0.0
    assert result.time_to_first_caption_s == pytest.approx(0.8)
    assert result.end_lag_s == pytest.approx(0.9)
    assert result.cpu_per_audio_second == pytest.approx(0.5)


def test_peer_settings_keep_whisperlivekit_offline_and_on_our_model(tmp_path: Path) -> None:
    settings = PeerSettings(model_dir=tmp_path / "model", warmup_wav=tmp_path / "warm.wav")
    args = settings.arguments()
    assert args[args.index("--model_dir") + 1] == str(tmp_path / "model")
    assert args[args.index("--backend-policy") + 1] == "localagreement"
    assert args[args.index("--backend") + 1] == "faster-whisper"
    # Without a warm-up file it downloads one; without --pcm-input it expects encoded audio.
    assert args[args.index("--warmup-file") + 1] == str(tmp_path / "warm.wav")
    assert "--pcm-input" in args
    assert OFFLINE_ENV["HF_HUB_OFFLINE"] == "1"
    assert ws_url("http://127.0.0.1:8123") == "ws://127.0.0.1:8123/asr"


@pytest.mark.model
@pytest.mark.skipif(
    not peer_installed(),
    reason="WhisperLiveKit is not installed in .venv-peer (docs/metrics.md, 'Peer comparison')",
)
async def test_real_whisperlivekit_replay_gives_measurable_captions(tmp_path: Path) -> None:
    full = load_recording(SONNET_WAV)
    clip = dataclasses.replace(full, pcm=full.pcm[: 2 * 16000 * 6])  # "2. When forty ... brow,"
    settings = PeerSettings(
        model_dir=whisper_model_dir("tiny.en"),
        warmup_wav=write_warmup_wav(clip, tmp_path / "warm.wav", seconds=2.0),
    )
    server = PeerServer(tmp_path / "wlk.log", settings)
    handle = await server.start(ready_timeout=240.0)
    try:
        pid = handle.pid
        assert pid is not None
        peer = await replay_peer(handle.base_url, clip, lambda: cpu_seconds(pid))
    finally:
        await server.stop()
    words = final_words(peer.mapped.updates)
    expected = normalise_words("When forty winters shall besiege thy brow")
    assert sum(w in words for w in expected) >= 5, words
    assert peer.mapped.uncommitted_words == 0
    assert any(u.state == "draft" and u.text for u in peer.mapped.updates)
    assert peer.replay.ended_at > peer.replay.schedule.send_times[-1]
    assert peer.replay.server_cpu_seconds is not None and peer.replay.server_cpu_seconds > 0
    assert "Downloading" not in (tmp_path / "wlk.log").read_text()


def hand_made_run(name: str, earlier_by: float, tmp_path: Path) -> SystemRun:
    """One file replayed to a system that showed every snapshot of the hand-made session
    ``earlier_by`` seconds sooner."""
    recording = small_recording()
    schedule = SendSchedule(
        16000, tuple(1600 * (k + 1) for k in range(10)), tuple(100.1 + 0.1 * k for k in range(10))
    )
    raw = [
        Received(100.9 - earlier_by, message([], "Shall I")),
        Received(101.4 - earlier_by, message([" Shall I"], "compare the")),
        Received(101.8 - earlier_by, message([" Shall I compare thee"], "")),
    ]
    times = {"connected": 99.9, "ready": 100.0, "stop_sent": 101.0, "ended": 101.9 - earlier_by}
    peer = to_replay(recording, schedule, raw, times, cpu_seconds=0.5)
    reference = (
        TimedWord("shall", 0.05, 0.25),
        TimedWord("i", 0.25, 0.45),
        TimedWord("compare", 0.45, 0.65),
        TimedWord("thee", 0.65, 0.85),
    )
    offline = OfflineDecode("tiny", DecodeSettings(), "Shall I compare thee", (), 1.0)
    result = measure_file(recording, reference, offline, peer.replay)
    return SystemRun(
        name=name,
        results=(with_display_erasure(result, peer.replay),),
        replays=(peer.replay,),
        segment_erasure=(result.erasure,),
        loads=(Load(1.0, 1.5),),
        server_command=("server",),
        server_log=tmp_path / f"{name}.log",
        peer_replays=(peer,),
    )


def test_peer_report_puts_both_systems_side_by_side(tmp_path: Path) -> None:
    ours = hand_made_run("ours", 0.4, tmp_path)
    peer = hand_made_run("whisperlivekit", 0.0, tmp_path)
    settings = PeerRunSettings(wavs=(), out=tmp_path / "out")
    json_path, md_path, markdown = write_peer_report(ours, peer, settings, "python -m bench.peer")

    report = json.loads(json_path.read_text())
    met = report["goals_met"]
    # Draft p50 ("thee" is first shown by the final, "the" being no match):
    # ours (0.2, 0.0, 0.3, 0.5) -> 0.25, peer (0.6, 0.4, 0.7, 0.9) -> 0.65.
    assert met["draft_latency_p50_ratio"] == pytest.approx(0.25 / 0.65)
    # Final p50: ours 0.6, peer 1.0.
    assert met["final_latency_p50_ratio"] == pytest.approx(0.6)
    assert met["met"] == {"draft_latency_p50": True, "final_latency_p50": True, "wer": None}
    rows = {row["metric"]: row for row in report["comparison"]}
    assert rows["end lag, median (s)"]["ratio"] == pytest.approx(0.5 / 0.9)
    # "compare the" -> "compare thee" takes one word off the screen; 4 words are final.
    assert rows["erasure (whole display)"]["ours"] == pytest.approx(0.25)
    (peer_file,) = report["systems"]["peer"]["files"]
    assert peer_file["mapping"] == {"rewrites": 0, "uncommitted_words": 0, "raw_messages": 3}
    assert peer_file["erasure_per_segment"] == pytest.approx(0.25)
    assert peer_file["load_average_1m"] == {"before": 1.0, "after": 1.5}
    assert md_path.read_text() == markdown
    assert "| draft latency p50 (s) | 0.25 | 0.65 | 0.38 |" in markdown
    assert "| tiny | 1.0 | 0.000 / 0.000 | 0.25 / 0.65 | 0.60 / 1.00 |" in markdown
    trace = json.loads((tmp_path / "out" / "traces" / "peer-whisperlivekit-tiny.json").read_text())
    assert len(trace["raw"]) == 3
