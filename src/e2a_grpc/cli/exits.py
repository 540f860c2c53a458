"""The exit codes of the ``e2a-grpc`` commands, and the help text that lists them."""

EXIT_OK = 0
EXIT_FAILED = 1  # the server or the agent failed
EXIT_BAD_INPUT = 2  # also argparse's exit code for usage errors
EXIT_NOT_APPLICABLE = 3
EXIT_NO_SERVER = 4
EXIT_WAITING = 5  # the turn ended with a question nobody answered: its task waits
EXIT_TIMEOUT = 124  # as timeout(1) exits
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

EXIT_CODES_HELP = f"""\
exit codes:
  {EXIT_OK:<4} ok
  {EXIT_FAILED:<4} the server or the agent failed
  {EXIT_BAD_INPUT:<4} bad input or usage (also a missing or unreadable file)
  {EXIT_NOT_APPLICABLE:<4} the conversion does not apply to this record
  {EXIT_NO_SERVER:<4} no server could be reached (--server; NATS for subscribe, agent and agents)
  {EXIT_WAITING:<4} the agent waits for an answer (chat: a question not answered here)
  {EXIT_TIMEOUT:<4} --timeout passed before the answer was complete
  {EXIT_INTERRUPTED:<4} interrupted (Ctrl-C)
"""
