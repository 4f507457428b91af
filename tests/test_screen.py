"""The screen a person would see (roost.term.screen): pure, bytes in, text and answers out."""

import pyte
import pytest

from roost.term.screen.answers import PRIMARY_DA, SECONDARY_DA
from roost.term.screen.screen import Screen
from roost.term.screen.render import render_screen


def fed(*chunks, rows=6, cols=30):
    screen = Screen(rows, cols)
    for chunk in chunks:
        screen.feed(chunk)
    return screen


def test_plain_text_lines_and_cursor():
    screen = fed(b"hello\r\nworld   \r\n> ")
    assert screen.lines()[:3] == ["hello", "world", ">"]
    assert screen.cursor == (2, 2)
    assert screen.text() == "hello\nworld\n>"
    assert screen.text(last=2) == "world\n>"


def test_text_drops_trailing_blank_lines_but_keeps_inner_ones():
    screen = fed(b"one\r\n\r\nthree\r\n\r\n")
    assert screen.text() == "one\n\nthree"


def test_utf8_split_across_chunks_and_wide_characters():
    data = "数据库 é ok".encode()
    screen = Screen(3, 20)
    for index in range(len(data)):          # one byte at a time: every split point
        screen.feed(data[index:index + 1])
    assert screen.lines()[0] == "数据库 é ok"
    # A wide character takes two cells: the cursor is past 3*2 + len(" é ok").
    assert screen.cursor == (0, 11)


def test_invalid_utf8_is_replaced_not_fatal():
    screen = fed(b"bad \xff\xfe bytes\r\nnext")
    assert screen.lines()[0] == "bad \ufffd\ufffd bytes"
    assert screen.lines()[1] == "next"


def test_cursor_position_query_is_answered_for_this_size():
    screen = fed(b"ab\r\ncde\x1b[6n")
    assert screen.answers() == b"\x1b[2;4R"
    assert screen.answers() == b""   # answers() clears


def test_status_and_device_attribute_queries():
    screen = fed(b"\x1b[5n\x1b[c\x1b[0c\x1b[>c\x1b[>0c")
    assert screen.answers() == ("\x1b[0n" + PRIMARY_DA * 2 + SECONDARY_DA * 2).encode()


def test_colour_queries_answer_with_the_query_terminator():
    screen = fed(b"\x1b]10;?\x07\x1b]11;?\x1b\\")
    assert screen.answers() == (b"\x1b]10;rgb:c0c0/c0c0/c0c0\x07"
                                b"\x1b]11;rgb:0000/0000/0000\x1b\\")


def test_kitty_keyboard_query_is_unsupported_and_leaves_no_trace():
    screen = fed(b"a\x1b[?u\x1b[>1u\x1b[<u\x1b[=1;1ub\x1b[c")
    # Unanswered (programs read the DA answer after it as "unsupported").
    assert screen.answers() == PRIMARY_DA.encode()
    assert screen.lines()[0] == "ab"


def test_queries_split_across_chunks():
    screen = fed(b"x\x1b[", b"6", b"n")
    assert screen.answers() == b"\x1b[1;2R"


def test_strings_are_swallowed_not_drawn():
    screen = fed(b"a\x1bP+q544e\x1b\\b\x1b_Gf=100;AAAA\x1b\\c\x1b]8;;http://x\x07d\x1b]8;;\x07")
    assert screen.lines()[0] == "abcd"


def test_title_is_kept():
    screen = fed(b"\x1b]0;my agent\x07")
    assert screen.title == "my agent"


def test_alternate_screen_in_and_out_keeps_the_main_screen():
    screen = fed(b"main line 1\r\nmain line 2\r\n$ ")
    assert screen.cursor == (2, 2)
    screen.feed(b"\x1b[?1049h")
    assert screen.in_alternate
    assert screen.text() == ""                  # 1049 clears the alternate screen
    screen.feed(b"\x1b[H\x1b[2JFULL SCREEN\x1b[3;5Hbox")
    assert screen.lines()[0] == "FULL SCREEN"
    assert screen.lines()[2] == "    box"
    screen.feed(b"\x1b[?1049l")
    assert not screen.in_alternate
    assert screen.text() == "main line 1\nmain line 2\n$"
    assert screen.cursor == (2, 2)              # 1049 restores the cursor
    assert screen.alt_exits == 1


def test_alternate_screen_47_and_1047():
    screen = fed(b"main\r\n")
    screen.feed(b"\x1b[?47hALT")
    assert screen.lines()[1] == "ALT"           # 47 keeps the cursor, does not clear
    screen.feed(b"\x1b[?47l")
    assert screen.text() == "main"
    screen.feed(b"\x1b[?1047h")
    assert screen.lines()[1] == "ALT"           # the alternate buffer kept its content
    screen.feed(b"\x1b[?1047l\x1b[?47h")
    assert screen.text() == ""                  # 1047's leave cleared it


def test_resize_answers_follow_the_size():
    screen = fed(b"top\r\nline", rows=4, cols=10)
    screen.resize(8, 40)
    screen.feed(b"\x1b[8;40H\x1b[6n\x1b[18t")
    assert screen.answers() == b"\x1b[8;40R\x1b[8;8;40t"


def test_fewer_rows_keep_the_cursor_line_and_drop_empty_rows_first():
    screen = fed(b"a\r\nb", rows=4, cols=10)
    screen.resize(2, 10)
    assert screen.lines() == ["a", "b"] and screen.cursor == (1, 1)
    screen = fed(b"a\r\nb\r\nc\r\nd", rows=4, cols=10)
    screen.resize(2, 10)
    assert screen.lines() == ["c", "d"] and screen.cursor == (1, 1)


def test_resize_in_the_alternate_screen_resizes_the_main_one_too():
    screen = fed(b"one\r\ntwo\r\n$ ", rows=6, cols=20)
    screen.feed(b"\x1b[?1049h\x1b[Hui")
    screen.resize(4, 10)
    screen.feed(b"\x1b[?1049l\x1b[6n")
    assert screen.lines() == ["one", "two", "$", ""]
    assert screen.answers() == b"\x1b[3;3R"


def test_deccolm_does_not_resize():
    screen = fed(b"\x1b[?3h", cols=30)
    screen.feed(b"\x1b[1;200Hx\x1b[6n")
    assert screen.answers() == b"\x1b[1;30R"


def test_odd_sequences_do_not_break_the_rest():
    screen = fed(b"\x1b[5K\x1b[1;2;3A\x1b[99999999999999999999Xok\x01\x02 still\x1b[38:2::255:0:0mred")
    assert screen.lines()[0] == "ok still" + "red"


def test_scroll_up_and_down():
    screen = fed(b"1\r\n2\r\n3", rows=3, cols=5)
    screen.feed(b"\x1b[S")
    assert screen.lines() == ["2", "3", ""]
    screen.feed(b"\x1b[2T")
    assert screen.lines() == ["", "", "2"]


def test_reset_clears_everything():
    screen = fed(b"text\x1b[?1049hmore\x1b[?2004h")
    screen.feed(b"\x1bc")
    assert not screen.in_alternate
    assert screen.text() == ""
    assert not screen.bracketed_paste


def test_decrqm_answers():
    screen = fed(b"\x1b[?2004h\x1b[?2004$p\x1b[?1$p\x1b[?2026$p")
    assert screen.answers() == b"\x1b[?2004;1$y\x1b[?1;2$y\x1b[?2026;0$y"


def test_render_ansi_repaints_the_same_screen():
    screen = fed(b"\x1b[1;31mred\x1b[0m plain\r\n\x1b[44m bg \x1b[0m\r\n\xe4\xb8\xad!\x1b[?2004h\x1b[?1h",
                 rows=5, cols=20)
    screen.feed(b"\x1b[3;2H")
    painted = screen.render_ansi()
    assert b"\x1b[?2004h" in painted and b"\x1b[?1h" in painted
    # Replaying the repaint on a fresh terminal gives the same characters and cursor.
    copy = Screen(5, 20)
    copy.feed(painted)
    assert copy.lines() == screen.lines()
    assert copy.cursor == screen.cursor
    first = copy._active.buffer[0][0]
    assert first.fg == "red" and first.bold
    assert copy._active.buffer[1][1].bg == "blue"


def test_render_of_the_alternate_screen_and_hidden_cursor():
    screen = fed(b"main\x1b[?1049h\x1b[?25l\x1b[2;3Hui")
    painted = screen.render_ansi()
    assert b"ui" in painted and b"main" not in painted
    assert painted.endswith(b"\x1b[?25l")


def test_render_screen_handles_truecolour():
    raw = pyte.Screen(10, 2)
    pyte.Stream(raw).feed("\x1b[38;2;1;2;3mX")
    painted = render_screen(raw, 2, 10, [], True)
    assert b"38;2;1;2;3" in painted


@pytest.mark.parametrize("chunk", [2048, 1])
def test_a_tui_frame_fed_in_any_slicing_renders_the_same(chunk):
    frame = (b"\x1b[?1049h\x1b[H\x1b[2J\x1b[1;1H\x1b[7m status \x1b[0m\x1b[3;4H\xe2\x94\x8c\xe2\x94\x80"
             b"\x1b[4;4Hasks: \x1b[1mproceed?\x1b[0m\x1b]0;title\x07\x1b[5;1H> ")
    whole = fed(frame)
    pieces = Screen(6, 30)
    for index in range(0, len(frame), chunk):
        pieces.feed(frame[index:index + chunk])
    assert pieces.lines() == whole.lines()
    assert pieces.cursor == whole.cursor == (4, 2)


def test_a_frozen_screen_reads_the_same_and_thaws_on_output():
    screen = fed(b"\x1b[1;33mwarn\x1b[0m plain \xe4\xb8\xad\xe6\x96\x87 e\xcc\x81\r\nsecond\x1b[?1049h\x1b[2;2Halt",
                 rows=4, cols=24)
    lines, painted, cursor = screen.lines(), screen.render_ansi(), screen.cursor
    screen.freeze()
    assert screen.frozen
    assert screen.lines() == lines and screen.text() == "\n alt"
    assert screen.cursor == cursor
    screen.feed(b"!")                       # output thaws it
    assert not screen.frozen
    assert screen.lines()[1] == " alt!"
    screen.feed(b"\x1b[?1049l")
    assert screen.lines()[:2] == ["warn plain 中文 é", "second"]
    copy = Screen(4, 24)
    copy.feed(painted)
    assert copy.lines() == lines


def test_render_thaws_a_frozen_screen():
    screen = fed(b"\x1b[31mred\x1b[0m")
    painted = screen.render_ansi()
    screen.freeze()
    assert screen.render_ansi() == painted


def test_random_bytes_never_break_the_screen():
    import random

    rng = random.Random(3)
    alphabet = b"\x1b\x1b\x1b[[]]?;;:0123456789hlmHJKcnu$ >P\\_\x07\x9b\x9d\x9c\r\n\x08\tabc\xe4\xb8"
    screen = Screen(10, 30)
    for _ in range(300):
        screen.feed(bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 400))))
    screen.answers()
    screen.feed(b"\x18\x1b\\\x1bc\x1b[?1049lok\x1b[6n")   # cancel, finish any string, reset
    assert screen.lines()[0] == "ok"
    assert screen.answers() == b"\x1b[1;3R"


def test_frozen_screens_share_nothing_that_one_of_them_changes():
    # Tab stops and modes are shared between idle screens: a change after thawing one
    # must reach only that one.
    first, second = fed(b"a\tb\x1b[?2004h"), fed(b"x\ty")
    first.freeze()
    second.freeze()
    second.feed(b"\r\n\x1b[3G\x1bH\x1b[?2004l\rp\tq")       # a tab stop at column 3
    assert second.lines()[1] == "p q"
    assert not second.bracketed_paste and first.bracketed_paste
    first.feed(b"\r\np\tq")
    assert first.lines()[1] == "p       q"                 # still every eight columns
    other = fed(b"\r\np\tq")
    assert other.lines()[1] == "p       q"


@pytest.mark.parametrize("chunks", [
    [b"main\x1b[?47hALT\x1b[?47l", b"\x1b[?47h", b"\x1b[?47l!"],             # 47 keeps it
    [b"one\x1b[?1049h\x1b[2;2Hui", b"\x1b[?1049l", b"\x1b[?1049hnew", b"\x1b[?1049l+"],
    [b"a\x1b7\x1b[?1047hb\x1b[5;5H", b"\x1b8c", b"\x1b[?1047ld\x1bc", b"e"],
])
def test_freezing_between_any_chunks_changes_nothing_shown(chunks):
    frozen, plain = Screen(6, 30), Screen(6, 30)
    for chunk in chunks:
        frozen.feed(chunk)
        plain.feed(chunk)
        frozen.freeze()
        assert (frozen.lines(), frozen.cursor, frozen.in_alternate) == \
            (plain.lines(), plain.cursor, plain.in_alternate)
    assert frozen.render_ansi() == plain.render_ansi()


def test_a_sequence_split_by_freezing_is_completed_after():
    screen = fed(b"ab\x1b[3")
    screen.freeze()                                         # the parser holds "\x1b[3"
    screen.feed(b"1mc\xe4")
    screen.freeze()                                         # the decoder holds half a character
    screen.feed(b"\xb8\xad")
    assert screen.lines()[0] == "abc\u4e2d"
    assert screen._active.buffer[0][2].fg == "red"


def test_a_zero_width_character_that_combines_with_nothing_cuts_nothing():
    # pyte alone drops the rest of the run after U+FE0F (an emoji's variation selector).
    screen = Screen(3, 40)
    screen.feed("⚠\ufe0f Dangerous command: rm -rf\r\nzero\u200bwidth\u200d joiner\r\n".encode())
    assert screen.lines()[:2] == ["⚠ Dangerous command: rm -rf", "zerowidth joiner"]


def test_take_change_says_whether_the_text_shown_changed_not_the_bytes():
    screen = Screen(4, 40)
    screen.feed(b"> waiting\r\n")
    assert screen.take_change() is True and screen.take_change() is False
    screen.feed(b"\x1b[1;1H> waiting")                 # the same text drawn again
    assert screen.take_change() is False
    screen.feed(b"\x1b]0;a new title\x07\x1b[3;5H")    # a title, a cursor move
    assert screen.take_change() is False
    screen.feed(b"\x1b[1;1H> working")
    assert screen.take_change() is True
    screen.feed(b"\x1b[?1049h")                         # the other screen shows
    assert screen.take_change() is True
    screen.resize(5, 40)
    assert screen.take_change() is True


def test_shared_cells_draw_exactly_what_pyte_draws():
    """CellScreen's draw (one shared Char per text and pen) against pyte's own, on text
    that wraps, inserts, draws wide characters at the edge, combines marks (at a line's
    start too) and changes pens and charsets between runs: every cell the same."""
    import random

    from roost.term.screen.pyte_screen import CellScreen

    pieces = ["plain text ", "wide 中文字 ", "e\u0301", "\u0301", "x" * 37, "🙂", "tab\tstop", "\x0e", "\x0f",
              "\x1b[1;31m", "\x1b[0m", "\x1b[4h", "\x1b[4l", "\x1b[?7l", "\x1b[?7h", "\r", "\n", "\x1b[3;38H",
              "\x1b[1;1H", "\x1b[38;2;1;2;3m", "\x1b(0", "\x1b(B", "lqqk", "\x08\x08"]
    generator = random.Random(21)
    for trial in range(40):
        ours, theirs = CellScreen(40, 6), pyte.Screen(40, 6)
        text = "".join(generator.choice(pieces) for _ in range(60))
        pyte.Stream(ours).feed(text)
        pyte.Stream(theirs).feed(text)
        assert {y: dict(line) for y, line in ours.buffer.items()} == \
            {y: dict(line) for y, line in theirs.buffer.items()}, text
        assert (ours.cursor.x, ours.cursor.y) == (theirs.cursor.x, theirs.cursor.y)


def test_a_drawn_character_allocates_no_cell():
    from roost.term.screen.pyte_screen import new_pyte_screen

    first, second = new_pyte_screen(4, 20), new_pyte_screen(4, 20)
    pyte.Stream(first).feed("same \x1b[1mbold\x1b[0m")
    pyte.Stream(second).feed("\x1b[3;1Hsame \x1b[1mbold\x1b[0m")
    assert first.buffer[0][0] is second.buffer[2][0]            # "s", default pen: one object
    assert first.buffer[0][5] is second.buffer[2][5]            # "b", bold: one object
    assert first.buffer[0][5].bold and not first.buffer[0][0].bold
