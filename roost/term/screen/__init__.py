"""What a person would see on a job's terminal: pyte screens under roost's own escape
parser, packed small while idle, rendered for attachers. Plain Python: no gevent here."""
