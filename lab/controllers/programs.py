"""What a started container does, from its image and its command line (pure, no clock).

The kubelet asks :func:`plan` once per start. Docker's rules give the command line: the
pod's ``command`` replaces the image's entrypoint (and drops its default arguments), ``args``
replace the default arguments. Then:

- the image's server binary (``nginx``, ``redis-server``, an entrypoint script that ends up
  running it …) runs the server the catalog describes;
- a shell (``sh -c '…'``, ``bash -c``) or a shell utility in an image that has one runs a
  small interpreter over the script: ``sleep N`` takes N seconds, ``sleep infinity``,
  ``tail -f``, ``while true`` loops, ``nc -l`` and ``httpd -f`` never end, ``echo`` and
  ``printenv`` print (with ``$VAR`` expanded from the container's environment), ``exit N`` and
  ``false`` fail, ``true`` succeeds, and an unknown program is ``sh: X: not found`` (127);
- a bare shell with no script exits at once (no terminal), unless the pod keeps stdin open;
- anything else is a binary the image does not have: it exits 127.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lab.controllers import shell_syntax
from lab.controllers.shell_syntax import Node
from lab.images import ImageSpec

SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
# Programs every image with a shell has (busybox applets or coreutils), answered with status 0.
UTILITIES = frozenset(
    {
        "awk",
        "base64",
        "basename",
        "cd",
        "chmod",
        "chown",
        "cp",
        "curl",
        "cut",
        "dd",
        "df",
        "dig",
        "dirname",
        "du",
        "find",
        "free",
        "grep",
        "gzip",
        "head",
        "id",
        "ifconfig",
        "ip",
        "kill",
        "ln",
        "ls",
        "md5sum",
        "mkdir",
        "mount",
        "mv",
        "netstat",
        "nslookup",
        "ps",
        "read",
        "rm",
        "sed",
        "set",
        "sha256sum",
        "sort",
        "ss",
        "stat",
        "sync",
        "tar",
        "tee",
        "touch",
        "tr",
        "trap",
        "uniq",
        "unset",
        "uptime",
        "wait",
        "wc",
        "wget",
        "which",
    }
)
# Programs the interpreter models, found in every image that has a shell.
PROGRAMS = UTILITIES | {
    "cat",
    "date",
    "echo",
    "env",
    "false",
    "hostname",
    "httpd",
    "nc",
    "netcat",
    "ping",
    "printenv",
    "printf",
    "pwd",
    "sleep",
    "socat",
    "tail",
    "test",
    "top",
    "true",
    "uname",
    "watch",
    "whoami",
    "yes",
    "[",
}
_PORT_FLAGS = re.compile(
    r"^(?:--?(?:port|http-port|listen|listen-port|bind|addr|address|web\.listen-address))"
    r"[= ]?(?:[\w.\-\[\]]*:)?(\d{2,5})$"
)
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_VARIABLE = re.compile(r"\$(?:\{(\w+)(?::?-([^}]*))?\}|(\w+|\?))")


@dataclass
class Plan:
    """What one run of a container does."""

    serve: bool = False  # runs the image's server as the catalog describes it
    exit_code: int | None = None  # None: runs until it is stopped
    after: float = 0.0  # seconds until it exits
    output: list[str] = field(default_factory=list)  # what it prints, line by line
    listens: list[int] = field(default_factory=list)  # ports it opens
    # The ports among them that answer HTTP, with the paths served (globs; None: any path).
    http: dict[int, list[str] | None] = field(default_factory=dict)
    missing: str = ""  # the program the image does not have (exit 127)


def command_line(spec: ImageSpec, container: dict[str, Any]) -> list[str]:
    """The argv a container runs, by Docker's entrypoint/cmd rules."""
    command = [str(c) for c in container.get("command") or []]
    args = [str(a) for a in container.get("args") or []]
    if command:
        return [*command, *args]
    if spec.entrypoint or spec.cmd:
        return [*spec.entrypoint, *(args or spec.cmd)]
    return [*([spec.command] if spec.command else []), *args]


def plan(spec: ImageSpec, container: dict[str, Any], env: dict[str, str], pod: str) -> Plan:
    argv = command_line(spec, container)
    servers = spec.server_binaries()
    entry = spec.entrypoint
    execs_args = bool(entry) and (entry[-1].endswith(".sh") or entry[0].endswith("tini"))
    if execs_args and argv[: len(entry)] == entry and entry[-1].rsplit("/", 1)[-1] not in servers:
        argv = argv[len(entry) :]  # an entrypoint script that execs its arguments
    while argv:
        program = argv[0].rsplit("/", 1)[-1]
        if program not in servers:
            break
        rest = argv[1:]
        # An entrypoint script runs the server with options or a config file, or execs
        # another command; a server's own script takes a subcommand (catalina.sh run).
        entrypoint = program in {e.rsplit("/", 1)[-1] for e in entry}
        if (
            program.endswith(".sh")
            and entrypoint
            and rest
            and not rest[0].startswith("-")
            and not rest[0].endswith((".yml", ".yaml", ".conf", ".json", ".cfg"))
        ):
            if rest[0].rsplit("/", 1)[-1] in servers:
                argv = rest
                continue
            argv = rest
            break
        ports = (_ports(rest) if spec.port_args else []) or list(spec.listens)
        http: dict[int, list[str] | None] = (
            dict.fromkeys(ports, spec.http_paths) if spec.http else {}
        )
        return Plan(serve=True, listens=ports, http=http)
    if not argv:
        return Plan(exit_code=0, after=0.2)
    program = argv[0].rsplit("/", 1)[-1]
    if not spec.shell or program not in SHELLS | PROGRAMS | set(spec.binaries):
        return Plan(exit_code=127, after=0.2, missing=argv[0])
    shell = Shell(env, pod, set(spec.binaries), stdin=bool(container.get("stdin")))
    return shell.run_argv(argv) if program in SHELLS else shell.run_words(argv)


def _ports(args: list[str]) -> list[int]:
    ports: list[int] = []
    joined = [
        f"{a}={b}" if a.startswith("-") and "=" not in a and b.isdigit() else a
        for a, b in zip(args, [*args[1:], ""], strict=True)
    ]
    for arg in joined:
        match = _PORT_FLAGS.match(arg)
        if match:
            ports.append(int(match.group(1)))
    return ports


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class _Forever(Exception):
    pass


class _Break(Exception):
    pass


class Shell:
    """A tiny POSIX-shell interpreter: enough to say whether a script ends, when and how."""

    def __init__(self, env: dict[str, str], pod: str, binaries: set[str], *, stdin: bool) -> None:
        self.env = {"HOSTNAME": pod, "HOME": "/root", "PATH": "/usr/local/bin:/usr/bin:/bin"}
        self.env.update(env)
        self.binaries = binaries
        self.stdin = stdin
        self.time = 0.0
        self.output: list[str] = []
        self.listens: list[int] = []
        self.http: dict[int, list[str] | None] = {}
        self.files: set[str] = {"/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/etc/passwd"}
        self.status = 0
        self.errexit = False
        self.background_forever = False

    # ------------------------------------------------------------ entry points

    def run_argv(self, argv: list[str]) -> Plan:
        """``sh``, ``sh -c SCRIPT``, ``sh FILE``."""
        rest = argv[1:]
        while rest and rest[0].startswith("-") and rest[0] != "-c":
            if "e" in rest[0][1:]:
                self.errexit = True
            rest = rest[1:]
        if rest and rest[0] == "-c":
            script = rest[1] if len(rest) > 1 else ""
            return self._finish(lambda: self._script(script))
        if rest:
            self.output.append(f"{argv[0]}: can't open '{rest[0]}': No such file or directory")
            return Plan(exit_code=2, after=0.2, output=self.output)
        if self.stdin:  # an interactive shell with stdin open waits for input
            return Plan(exit_code=None)
        return Plan(exit_code=0, after=0.2)

    def run_words(self, argv: list[str]) -> Plan:
        return self._finish(lambda: self._execute(("cmd", argv)))

    def _finish(self, body: Any) -> Plan:
        code: int | None
        try:
            body()
            code = None if self.background_forever else self.status
        except _Exit as stop:
            code = stop.code
        except _Forever:
            code = None
        except _Break:
            code = self.status
        return Plan(
            exit_code=code,
            after=max(self.time, 0.2),
            output=self.output,
            listens=self.listens,
            http=self.http,
        )

    # ------------------------------------------------------------ parsing

    def _script(self, script: str) -> None:
        nodes = shell_syntax.parse(script)
        for node in nodes:
            self._execute(node)

    # ------------------------------------------------------------ execution

    def _execute(self, node: Node) -> None:
        kind, value = node
        if kind == "seq":  # (connector, node) pairs
            for connector, child in value:
                if connector == "&&" and self.status != 0:
                    continue
                if connector == "||" and self.status == 0:
                    continue
                self._execute(child)
        elif kind == "bg":  # runs alongside: takes no time, may keep the container alive
            started = self.time
            try:
                self._execute(value)
            except _Forever:
                self.background_forever = True
            except (_Exit, _Break):
                pass
            self.time, self.status = started, 0
        elif kind == "pipe":
            forever = False
            for child in value:
                try:
                    self._execute(child)
                except _Forever:
                    forever = True
            last = value[-1]
            if forever and not (last[0] == "cmd" and last[1][:1] == ["head"]):
                raise _Forever
        elif kind == "loop":
            self._loop(*value)
        elif kind == "for":
            name, items, body = value
            for item in items:
                self.env[name] = self._expand(item)
                try:
                    self._run_all(body)
                except _Break:
                    break
        elif kind == "if":
            for condition, body in value:
                if condition is None:
                    self._run_all(body)
                    break
                self._run_all(condition)
                if self.status == 0:
                    self._run_all(body)
                    break
            else:
                self.status = 0
        elif kind == "group":
            self._run_all(value)
        else:
            self._command([self._expand(w) for w in value])
            if self.errexit and self.status != 0:
                raise _Exit(self.status)

    def _run_all(self, nodes: list[Node]) -> None:
        for node in nodes:
            self._execute(node)

    def _loop(self, until: bool, condition: list[Node], body: list[Node]) -> None:
        self._run_all(condition)
        if (self.status == 0) == until:
            self.status = 0
            return
        try:
            self._run_all(body)  # the first pass shows what every pass prints
        except _Break:
            self.status = 0
            return
        raise _Forever

    def _expand(self, word: str) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(3)
            if name == "?":
                return str(self.status)
            found = self.env.get(name)
            if found is None or (found == "" and match.group(2) is not None):
                return match.group(2) or ""
            return found

        return _VARIABLE.sub(value, word)

    def _command(self, words: list[str]) -> None:
        while words and re.match(r"^\w+=", words[0]):
            name, _, val = words[0].partition("=")
            self.env[name] = val
            words = words[1:]
        if not words:
            self.status = 0
            return
        program, args = words[0].rsplit("/", 1)[-1], words[1:]
        self.status = 0
        if program == "exec":
            self._command(args)
            return
        if program == "exit":
            raise _Exit(int(args[0]) if args and args[0].lstrip("-").isdigit() else self.status)
        if program in ("true", ":"):
            return
        if program == "false":
            self.status = 1
        elif program == "break":
            raise _Break
        elif program in ("echo", "printf"):
            self._echo(program, args)
        elif program == "sleep":
            self._sleep(args)
        elif program in ("tail", "watch", "top", "yes") and _never_ends(program, args):
            raise _Forever
        elif program in SHELLS:
            if "-c" in args:
                self._script(args[args.index("-c") + 1] if args[-1] != "-c" else "")
            elif not self.stdin:
                return
            else:
                raise _Forever
        elif program in ("env", "printenv"):
            self._printenv(program, args)
        elif program == "hostname":
            self.output.append(self.env["HOSTNAME"])
        elif program in ("date", "whoami", "pwd", "uname"):
            self.output.append(
                {"date": "Thu Jan  1 00:00:00 UTC 2026", "whoami": "root", "pwd": "/"}.get(
                    program, "Linux"
                )
            )
        elif program == "cat":
            missing = [a for a in args if not a.startswith("-") and a not in self.files]
            if missing and not missing[0].startswith("/proc/"):
                self.output.append(f"cat: can't open '{missing[0]}': No such file or directory")
                self.status = 1
        elif program == "touch":
            self.files.update(a for a in args if not a.startswith("-"))
        elif program in ("test", "["):
            self._test([a for a in args if a != "]"])
        elif program == "ping":
            self._ping(args)
        elif program in ("nc", "netcat", "httpd", "socat"):
            self._listener(program, args)
        elif program.startswith("python") or program in ("node", "nodejs"):
            self._interpreter(program, args)
        elif program in UTILITIES or program in self.binaries:
            return
        else:
            self.output.append(f"sh: {words[0]}: not found")
            self.status = 127

    # ------------------------------------------------------------ utilities

    def _echo(self, program: str, args: list[str]) -> None:
        if program == "printf":
            text = args[0] if args else ""
            for arg in args[1:]:
                text = re.sub(r"%[sd]", arg, text, count=1)
            text = text.replace("\\n", "\n")
            self.output.extend(line for line in text.split("\n")[:-1] or [text] if line)
            return
        words = [a for a in args if a not in ("-n", "-e")]
        self.output.extend(" ".join(words).replace("\\n", "\n").split("\n"))

    def _sleep(self, args: list[str]) -> None:
        for arg in args:
            if arg in ("infinity", "inf"):
                raise _Forever
            match = _DURATION.match(arg)
            if match is None:
                self.output.append(f"sleep: invalid number '{arg}'")
                self.status = 1
                return
            scale = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
            self.time += float(match.group(1)) * scale

    def _printenv(self, program: str, args: list[str]) -> None:
        names = [a for a in args if not a.startswith("-")]
        if program == "env" or not names:
            self.output.extend(f"{k}={v}" for k, v in self.env.items())
            return
        found = [self.env[n] for n in names if n in self.env]
        self.output.extend(found)
        if len(found) < len(names):
            self.status = 1

    def _test(self, args: list[str]) -> None:
        if len(args) == 2 and args[0] in ("-f", "-e", "-s"):
            self.status = 0 if args[1] in self.files else 1
        elif len(args) == 2 and args[0] == "-z":
            self.status = 0 if not args[1] else 1
        elif len(args) == 2 and args[0] == "-n":
            self.status = 0 if args[1] else 1
        elif len(args) == 3 and args[1] in ("=", "==", "!="):
            self.status = 0 if (args[0] == args[2]) == (args[1] != "!=") else 1
        elif len(args) == 1:
            self.status = 0 if args[0] else 1
        else:
            self.status = 0

    def _ping(self, args: list[str]) -> None:
        if "-c" not in args:
            raise _Forever
        count = args[args.index("-c") + 1] if args.index("-c") + 1 < len(args) else "1"
        self.time += float(count) if count.isdigit() else 1.0

    def _listener(self, program: str, args: list[str]) -> None:
        listening = program == "socat" or any(
            a.startswith("-") and "l" in a.lstrip("-") for a in args
        )
        if program == "httpd":
            listening = "-f" in args or any(a.startswith("-") and "f" in a for a in args)
            port = 80
        else:
            port = 0
        if not listening:
            return
        numbers = [a for a in args if a.isdigit()]
        if "-p" in args and args.index("-p") + 1 < len(args):
            numbers.insert(0, args[args.index("-p") + 1])
        found = re.search(r"LISTEN:(\d+)", " ".join(args))
        if found:
            numbers.insert(0, found.group(1))
        if numbers and numbers[0].isdigit():
            port = int(numbers[0])
        if port:
            self.listens.append(port)
            if program == "httpd":  # busybox httpd serves the files of its home folder
                self.http[port] = None
        raise _Forever

    def _interpreter(self, program: str, args: list[str]) -> None:
        python = program.startswith("python")
        if python and program not in self.binaries and "python3" not in self.binaries:
            self.output.append(f"sh: {program}: not found")
            self.status = 127
            return
        if not python and "node" not in self.binaries:
            self.output.append(f"sh: {program}: not found")
            self.status = 127
            return
        if python and "-m" in args:
            module = args[args.index("-m") + 1] if args.index("-m") + 1 < len(args) else ""
            if module == "http.server":
                rest = [a for a in args[args.index("-m") + 2 :] if a.isdigit()]
                port = int(rest[0]) if rest else 8000
                self.listens.append(port)
                self.http[port] = ["/"]  # the listing of its folder; files it cannot know
                raise _Forever
            return
        flag = "-c" if python else "-e"
        if flag in args and args.index(flag) + 1 < len(args):
            self._code(args[args.index(flag) + 1], python)
            return
        scripts = [a for a in args if not a.startswith("-")]
        if scripts:
            if python:
                self.output.append(
                    f"{program}: can't open file '/{scripts[0].lstrip('/')}': "
                    "[Errno 2] No such file or directory"
                )
                self.status = 2
            else:
                self.output.append(f"Error: Cannot find module '/{scripts[0].lstrip('/')}'")
                self.status = 1
            return
        if self.stdin:
            raise _Forever

    def _code(self, code: str, python: bool) -> None:
        printed = r"print\((['\"])(.*?)\1\)" if python else r"console\.log\((['\"])(.*?)\1\)"
        self.output.extend(m.group(2) for m in re.finditer(printed, code))
        for seconds in re.findall(r"sleep\((\d+(?:\.\d+)?)\)", code):
            self.time += float(seconds)
        forever = (
            ("while True" in code or "while 1" in code or "serve_forever" in code)
            if python
            else ("setInterval" in code or ".listen(" in code)
        )
        port = re.search(r"(?:port\s*=\s*|\(\s*['\"]['\"]\s*,\s*|listen\()(\d{2,5})", code)
        if port:
            self.listens.append(int(port.group(1)))
            if re.search(r"http|express|serve_forever", code):
                self.http[int(port.group(1))] = None
        exit_call = re.search(r"(?:sys\.exit|exit|process\.exit)\((\d+)\)", code)
        if exit_call:
            raise _Exit(int(exit_call.group(1)))
        if python and re.search(r"^\s*raise\b|;\s*raise\b", code):
            self.output.append("Traceback (most recent call last):")
            self.status = 1
            return
        if forever:
            raise _Forever


def _never_ends(program: str, args: list[str]) -> bool:
    if program == "tail":
        return any(a in ("-f", "-F", "--follow") or (a.startswith("-") and "f" in a) for a in args)
    if program == "top":
        return "-n" not in args
    return True
