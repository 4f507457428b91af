"""The CSI sequences a Screen understands: what each final byte does to the pyte screen
that shows (`screen`), and the answers it asks of its owner (the roost Screen)."""

from roost.term.screen import answers
from roost.term.screen.pyte_screen import CSI_METHODS, number, sgr_params


def handle(owner, screen, final, params, prefix, intermediates):
    if intermediates:
        if intermediates == "$" and final == "p":
            owner.answer(answers.mode(number(params[0]), prefix == "?", owner.modes))
        return   # cursor style (SP q), soft reset (! p), ...
    if prefix == "":
        _plain(owner, screen, final, params)
    elif prefix == "?":
        _private(owner, screen, final, params)
    elif prefix == ">":
        if final == "c" and number(params[0]) == 0:
            owner.answer(answers.SECONDARY_DA)
        elif final == "q" and number(params[0]) == 0:
            owner.answer("\x1bP>|roost\x1b\\")   # XTVERSION
    # '<' and '=' (kitty keyboard pop/set, tertiary DA): not supported, ignored.


def _plain(owner, screen, final, params):
    method = CSI_METHODS.get(final)
    if method == "select_graphic_rendition":
        screen.select_graphic_rendition(*sgr_params(params))
    elif method is not None:
        getattr(screen, method)(*[number(param) for param in params])
    elif final == "J":
        screen.erase_in_display(min(number(params[0]), 3))
    elif final == "K":
        how = number(params[0])
        if how <= 2:
            screen.erase_in_line(how)
    elif final == "r":
        top = number(params[0])
        bottom = number(params[1]) if len(params) > 1 and params[1] else None
        screen.set_margins(top, bottom)
    elif final == "n":
        owner.answer_status(number(params[0]), private=False)
    elif final == "c":
        if number(params[0]) == 0:
            owner.answer(answers.PRIMARY_DA)
    elif final in "hl":
        modes = [number(param) for param in params]
        (screen.set_mode if final == "h" else screen.reset_mode)(*modes)
    elif final == "g":
        screen.clear_tab_stop(number(params[0]))
    elif final in "ST":
        owner.scroll(number(params[0], 1) or 1, up=final == "S")
    elif final == "s" and params == [""]:
        screen.save_cursor()
    elif final == "u" and params == [""]:
        screen.restore_cursor()
    elif final == "t" and number(params[0]) == 18:
        owner.answer(f"\x1b[8;{owner.rows};{owner.cols}t")
    elif final == "I":
        for _ in range(min(number(params[0], 1) or 1, owner.cols)):
            screen.tab()


def _private(owner, screen, final, params):
    if final in "hl":
        owner.set_private_modes([number(param) for param in params], final == "h")
    elif final == "n":
        owner.answer_status(number(params[0]), private=True)
    elif final == "J":
        screen.erase_in_display(min(number(params[0]), 3))
    elif final == "K" and number(params[0]) <= 2:
        screen.erase_in_line(number(params[0]))
    # `ESC[?u`, the kitty keyboard query: unanswered, i.e. unsupported (programs send a
    # primary DA after it and take that answer as "no").
