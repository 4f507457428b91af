"""Secrets masked before a notification leaves the daemon. The patterns, each replaced
by its label:

- API keys of the `sk-...` kind (OpenAI, Anthropic: `sk-`, `sk-ant-`, `sk-proj-`), GitHub
  tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), Slack tokens (`xoxb-`,
  `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`), AWS access key ids (`AKIA...`), Google API keys
  (`AIza...`), and JSON web tokens (`eyJ....eyJ....sig`);
- the value after `password`, `passwd`, `pwd`, `secret`, `token`, `api_key`/`apikey`,
  `access_key` and `auth` with `=` or `:` (`password=hunter2` -> `password=***`);
- a bearer credential (`Authorization: Bearer abc...` -> `Bearer ***`);
- the password of a URL (`https://user:pw@host` -> `https://user:***@host`).
"""

import re

_TOKENS = re.compile(
    r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_\-]{30,}"
    r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})")
_ASSIGNED = re.compile(r"(?i)\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth)"
                       r"(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&]+)")
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=\-]{8,}")
_URL_PASSWORD = re.compile(r"(://[^/\s:@]+:)[^@\s/]+@")
MASK = "***"


def mask(text):
    if not text:
        return text
    text = _TOKENS.sub(MASK, str(text))
    text = _BEARER.sub(lambda match: f"{match.group(1)} {MASK}", text)
    text = _ASSIGNED.sub(lambda match: f"{match.group(1)}{match.group(2)}{MASK}", text)
    return _URL_PASSWORD.sub(lambda match: f"{match.group(1)}{MASK}@", text)
