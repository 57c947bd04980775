"""The GUI thread's time spent drawing a streaming reply, paced (the app) against drawn at every text
flush (as before the pacer), with the chat's real transcript view offscreen. No engine: the reply grows
by ``--words-per-flush`` words every 50 ms, as the loop's text flushes arrive, up to ``--words``.

    python -m workbench.bench.gui.reply_draw_cost [--words 2000] [--words-per-flush 6]
    python -m workbench.bench.gui.reply_draw_cost --turns 50,200   (opening a kept conversation of that many turns)
    python -m workbench.bench.gui.reply_draw_cost --kept 100        (the chat pane built at the start over 100 kept
                                                                     conversations of 20 turns each)
"""
from __future__ import annotations

import argparse
import os
import sys
import time


def stream_reply(total_words: int, per_flush: int, paced: bool) -> dict:
    from PySide6.QtWidgets import QApplication

    from workbench.model.conversations import ChatMessage, Conversation
    from workbench.ui.chat_pane import TranscriptView
    from workbench.ui.render_pacer import RenderPacer

    app = QApplication.instance() or QApplication([])
    conversation = Conversation("bench")
    reply = ChatMessage("assistant", "", status="streaming")
    conversation.messages += [ChatMessage("user", "Tell me about vLLM."), reply]
    view = TranscriptView(conversation)
    view.resize(450, 760)
    view.show()
    view.sync()
    if not paced:
        view.pacer = RenderPacer(min_interval_s=0.0, share=float("inf"))  # every flush drawn at once
    words = open(__file__).read().split()
    words = (words * (total_words // len(words) + 1))[:total_words]
    busy_s, longest_s, started = 0.0, 0.0, time.perf_counter()
    for n in range(per_flush, total_words + per_flush, per_flush):
        flush_at = started + n / per_flush * 0.05
        while time.perf_counter() < flush_at:  # the event loop runs until the next flush is due
            t = time.thread_time()
            app.processEvents()
            spent = time.thread_time() - t
            busy_s, longest_s = busy_s + spent, max(longest_s, spent)
            time.sleep(0.001)
        reply.text = " ".join(words[:n])
        t = time.thread_time()
        view.render_message(reply.message_id, text_only=True)
        app.processEvents()
        spent = time.thread_time() - t
        busy_s, longest_s = busy_s + spent, max(longest_s, spent)
    wall_s = time.perf_counter() - started
    shown = len(view.views[reply.message_id].body.text().split())
    view.close()
    return {"paced": paced, "wall_s": wall_s, "gui_busy_share": busy_s / wall_s, "longest_ms": longest_s * 1e3,
            "draws": view.num_text_draws, "words_shown_at_end": shown}


def open_conversation(num_turns: int) -> tuple[float, float, float, float]:
    """A kept conversation opened: its views built (``sync``), its first layout and paint, then the longest
    turn of the event loop until every turn's view is built and laid out, and the time until then, in
    seconds. Questions of 12 words, replies of 150."""
    from PySide6.QtWidgets import QApplication

    from workbench.model.conversations import ChatMessage, Conversation
    from workbench.ui.chat_pane import TranscriptView

    app = QApplication.instance() or QApplication([])
    conversation = Conversation("kept")
    for n in range(num_turns):
        role, words = ("user", 12) if n % 2 == 0 else ("assistant", 150)
        conversation.messages.append(ChatMessage(role, " ".join(["word"] * words), status="done"))
    view = TranscriptView(conversation)
    view.resize(500, 700)
    view.show()
    started = time.perf_counter()
    view.sync()
    built = time.perf_counter()
    app.processEvents()
    shown = time.perf_counter()
    longest = 0.0
    while len(view.views) < num_turns and time.perf_counter() - shown < 60:
        turn = time.perf_counter()
        app.processEvents()
        longest = max(longest, time.perf_counter() - turn)
    app.processEvents()
    done = time.perf_counter()
    view.close()
    return built - started, shown - built, longest, done - started


def start_with_kept(num_conversations: int, turns_each: int = 20) -> tuple[float, float]:
    """The chat pane built over ``num_conversations`` kept conversations (put back as the start does, before
    the pane observes the model), and its first show, in seconds."""
    from PySide6.QtWidgets import QApplication

    from workbench.engine.spec import EngineConfig
    from workbench.model.app_model import AppModel
    from workbench.model.conversations import ChatMessage, Conversation
    from workbench.model.engine_commands import EngineCommands
    from workbench.ui.chat_pane import ChatPane

    app = QApplication.instance() or QApplication([])
    kept = []
    for number in range(num_conversations):
        conversation = Conversation(f"Kept {number}")
        for n in range(turns_each):
            role, words = ("user", 12) if n % 2 == 0 else ("assistant", 150)
            conversation.messages.append(ChatMessage(role, " ".join(["word"] * words), status="done"))
        kept.append(conversation)
    model = AppModel(EngineConfig(model="demo"))
    model.restore(kept, [])
    started = time.perf_counter()
    pane = ChatPane(model, EngineCommands(model, lambda command: None))
    built = time.perf_counter()
    pane.resize(700, 800)
    pane.show()
    app.processEvents()
    shown = time.perf_counter()
    pane.close()
    return built - started, shown - built


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="reply_draw_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=2000)
    parser.add_argument("--words-per-flush", type=int, default=6)
    parser.add_argument("--turns", default="", help="comma-separated: open kept conversations of these many turns")
    parser.add_argument("--kept", type=int, default=0, help="the chat pane built over this many kept conversations")
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if args.kept:
        built_s, shown_s = start_with_kept(args.kept)
        print(f"{args.kept} kept conversations of 20 turns: chat pane built in {built_s * 1e3:.0f} ms, "
              f"first show {shown_s * 1e3:.0f} ms", flush=True)
        return 0
    if args.turns:
        print("| turns | views built ms | first layout and paint ms | longest turn after ms | all built ms |\n"
              "|---|---|---|---|---|")
        for num_turns in (int(n) for n in args.turns.split(",")):
            built_s, shown_s, longest_s, all_s = open_conversation(num_turns)
            print(f"| {num_turns} | {built_s * 1e3:.0f} | {shown_s * 1e3:.0f} | {longest_s * 1e3:.0f} | "
                  f"{all_s * 1e3:.0f} |", flush=True)
        return 0
    print(f"A reply of {args.words:,} words, {args.words_per_flush} words a flush, a flush every 50 ms.")
    print("| drawing | wall s | GUI thread busy | longest event-loop turn ms | draws | words shown at the end |")
    print("|---|---|---|---|---|---|")
    for paced in (False, True):
        r = stream_reply(args.words, args.words_per_flush, paced)
        print(f"| {'paced (the app)' if paced else 'every flush'} | {r['wall_s']:.1f} | {r['gui_busy_share']:.0%} | "
              f"{r['longest_ms']:.1f} | {r['draws']} | {r['words_shown_at_end']:,} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
