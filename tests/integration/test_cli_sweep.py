"""Every ``chainloom`` and ``chainloom-dev`` subcommand, fed bad input or an unreachable server,
fails in one line.

The command tree is walked programmatically, so a new command or option is swept without
touching this file. Each case runs ``python -m chainloom ...`` (``python -m chainloom_dev ...``
for the dev kit's commands) as a real process (a thread
pool keeps the whole sweep to tens of seconds) and fails on a traceback, on an exit code
outside docs/exit-codes.md, on a code other than the one the case expects, or on a message
that does not name the file it was about. Cases:

* bad arguments: an unknown option, a value of the wrong type, a missing required parameter;
* for every parameter that takes a path (a ``click.Path``/``click.File`` type, a ``PATH``
  metavar, or a name ending in ``path``/``file``): the path missing, unreadable, a binary
  file and a directory, and a binary file named by its environment variable;
* for every command with a server parameter (Redis, gRPC, spy, Cassandra) or Bigtable
  settings: every server pointed at a loopback port that refuses connections.

Commands that serve until stopped (``SERVES_FOREVER``) are only given bad input; ``stack up``
and ``stack down`` only bad arguments (they must never touch the shared stack), and every
process gets a private, empty ``CHAINLOOM_RUN``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest

from chainloom.cli._main import main
from chainloom_dev.cli._main import main as dev_main

EXIT_CODES = {0, 1, 2, 3, 4, 130}
"""The table of docs/exit-codes.md."""

BAD_INPUT, UNAVAILABLE = 2, 4

CASE_TIMEOUT = 45.0
"""Seconds one process may take; a command that has not failed by then did not fail fast."""

SERVES_FOREVER = {
    "relayer listen",
    "relayer work",
    "spy serve",
    "spy serve-public-api",
    "ledger replay",
    "ledger api",
    "ledger follow",
}
"""Commands that serve until stopped: swept with bad input only (they fail before serving)."""

ARGUMENTS_ONLY = {"stack up", "stack down", "stack image"}
"""Commands that act on the shared local stack: only bad arguments (parsed before they run)."""

OUTPUT_NAMES = ("out", "output")
"""Parameters that name a file to write: a missing or binary one is fine (it is created); an
existing directory too, for a parameter that names a directory to write into."""

CREATES = {
    ("ledger load", "sqlite_path"),
    ("ledger follow", "sqlite_path"),
    ("operator crds", "directories"),
}
"""Other (command, parameter) pairs naming a file the command creates when it is missing."""

ALWAYS = {"--listen": "127.0.0.1:0"}
"""Options given in every case of a command that has them (servers listen on a free port)."""

TEXT, DUMP, BINARY, DIRECTORY, UNREADABLE, MISSING, WALLET = (
    "text.txt",
    "ledgers.dump",
    "binary.bin",
    "a-directory",
    "unreadable.txt",
    "missing.txt",
    "wallet.hex",
)
"""The files of a case, relative to its own working directory (see :func:`make_inputs`)."""

BAD_FILES = {"missing": MISSING, "unreadable": UNREADABLE, "binary": BINARY, "directory": DIRECTORY}


FILLERS = {
    "message_id": "2/" + "00" * 32 + "/1",
    "tx_id": "0x" + "ab" * 32,
    "chain": "2",
    "events_chains": "2",
    "token_id": "00" * 32,
    "account": "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh",
    "digests": "00" * 32,
    "dump": DUMP,
    "inputs": "-",
    "first": "2023-01-01",
    "last": "2023-01-02",
}
"""Valid values for required parameters, by parameter name, so a case reaches its target."""

_listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
_listener.bind(("127.0.0.1", 0))
CLOSED_PORT = _listener.getsockname()[1]
"""A loopback port that is bound but not listening: connections to it are refused at once."""
CLOSED = f"127.0.0.1:{CLOSED_PORT}"

SERVER_VALUES = {
    "redis_url": f"redis://{CLOSED}/0",
    "grpc_address": CLOSED,
    "spy_address": CLOSED,
    "cassandra_hosts": CLOSED,
    "backend_type": "cassandra",
    "address": CLOSED,
    "rpc_url": f"http://{CLOSED}",
}
"""Option values pointing a command at the closed port, by parameter name."""

SERVER_ENV = {
    "CHAINLOOM_REDIS__URL": f"redis://{CLOSED}/0",
    "CHAINLOOM_DATABASE__CASSANDRA__HOSTS": f'["{CLOSED}"]',
    "BIGTABLE_EMULATOR_HOST": CLOSED,
    "CHAINLOOM_BIGTABLE__PROJECT": "sweep",
    "CHAINLOOM_BIGTABLE__INSTANCE": "sweep",
    "CHAINLOOM_BIGTABLE__TABLE": "sweep",
    "CHAINLOOM_BIGTABLE__OPERATION_TIMEOUT": "3",
}
"""The environment of every case: any server a command finds there is unreachable."""

REPLACES = {"grpc_address": "dump"}
"""A server option that replaces an argument (``ledger load --grpc`` instead of a DUMP file)."""

BIGTABLE_PARAMS = {"project", "bigtable_project"}
"""Parameters showing that a command (or its group) talks to Bigtable (configured by env)."""


@dataclass(frozen=True)
class Command:
    """One leaf of the command tree."""

    path: tuple[str, ...]
    """Its words after ``chainloom`` (``("relayer", "failed", "list")``)."""
    params: tuple[click.Parameter, ...]
    """Its own parameters."""
    inherited: tuple[click.Parameter, ...]
    """Parameters of the groups above it."""
    program: str = "chainloom"
    """The module ``python -m`` runs it with (``chainloom`` or ``chainloom_dev``)."""

    @property
    def name(self) -> str:
        return " ".join(self.path)


@dataclass(frozen=True)
class Case:
    """One process to run and what it must do."""

    id: str
    """The pytest id."""
    argv: tuple[str, ...]
    """Arguments after ``python -m chainloom``."""
    expected: frozenset[int]
    """Exit codes this case may end with."""
    must_name: str | None = None
    """Text the output must contain (the path a file case is about)."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables of this case (on top of :data:`SERVER_ENV`)."""
    stdin: str = ""
    """What the process reads on stdin (a signed VAA for the unreachable-server cases, so a
    command reading VAAs from stdin gets as far as its server)."""


@dataclass
class Result:
    """How a case's process ended."""

    code: int | None
    """Exit status (None: killed after :data:`CASE_TIMEOUT`)."""
    output: str = field(repr=False)
    """stdout and stderr."""


def commands() -> list[Command]:
    """Every leaf command under ``chainloom`` and ``chainloom-dev``, found by walking the click
    groups (no leaf has the same words in both)."""
    found: list[Command] = []

    def walk(
        group: click.Group,
        path: tuple[str, ...],
        inherited: tuple[click.Parameter, ...],
        program: str,
    ):
        context = click.Context(group)
        for name in group.list_commands(context):
            command = group.get_command(context, name)
            assert command is not None, f"{' '.join((*path, name))} is listed but not found"
            if isinstance(command, click.Group):
                walk(command, (*path, name), (*inherited, *command.params), program)
            else:
                found.append(Command((*path, name), tuple(command.params), inherited, program))

    for program, root in (("chainloom", main), ("chainloom_dev", dev_main)):
        walk(root, (), (), program)
    return found


def program_of(argv: tuple[str, ...]) -> str:
    """The module that runs ``argv`` (its leading words name one command of one program)."""
    for command in COMMANDS:
        if argv[: len(command.path)] == command.path:
            return command.program
    return "chainloom"


# ------------------------------------------------------------------------------- inputs


def make_inputs(root: Path, dump: Path) -> None:
    """A fresh set of input files in ``root``, the working directory of one case.

    Every case gets its own, so a command that writes a file (or a SQLite database in its
    working directory) cannot change what another case reads.
    """
    (root / TEXT).write_text("hello\n")
    shutil.copyfile(dump, root / DUMP)
    (root / BINARY).write_bytes(bytes(range(256)) * 16)
    (root / DIRECTORY).mkdir()
    (root / WALLET).write_text("11" * 32 + "\n")
    unreadable = root / UNREADABLE
    if os.geteuid() == 0:
        unreadable.symlink_to(UNREADABLE)  # root reads any mode: a symlink loop it cannot open
    else:
        unreadable.write_text("secret\n")
        unreadable.chmod(0)


def takes_path(parameter: click.Parameter) -> bool:
    """Whether ``parameter`` names a file (by type, by metavar or by name)."""
    if isinstance(parameter.type, click.Path | click.File):
        return True
    if parameter.metavar and "PATH" in parameter.metavar.upper():
        return True
    name = parameter.name or ""
    return name.endswith(("path", "file", "files"))


def is_output(command: Command, parameter: click.Parameter) -> bool:
    name = parameter.name or ""
    return name in OUTPUT_NAMES or (command.name, name) in CREATES


def option_name(parameter: click.Parameter) -> str:
    return max(parameter.opts, key=len)


def filler(parameter: click.Parameter) -> str:
    """A valid value for a required parameter."""
    name = parameter.name or ""
    if name in FILLERS:
        return FILLERS[name]
    if name == "wallet_file":
        return WALLET
    kind = parameter.type
    if isinstance(kind, click.Choice):
        return str(kind.choices[0])
    if isinstance(kind, click.DateTime):
        return "2023-01-01"
    if isinstance(kind, click.IntRange | click.FloatRange):
        return str(kind.min if kind.min is not None else 1)
    if isinstance(kind, click.types.IntParamType | click.types.FloatParamType):
        return "1"
    if isinstance(kind, click.Path):
        return f"filler-{name}"
    return "x"


def value_args(parameter: click.Parameter, value: str) -> list[str]:
    if isinstance(parameter, click.Argument):
        return [value]
    if isinstance(parameter, click.Option) and parameter.is_flag:
        return [option_name(parameter)]
    return [option_name(parameter), value]


def required_args(command: Command, *, skip: click.Parameter | None = None) -> list[str]:
    """Options then arguments filling every required parameter except ``skip``.

    Optional arguments are filled too: they are a command's main input (``ledger load DUMP``),
    without which it stops before reaching the file or server a case is about.
    """
    options: list[str] = []
    arguments: list[str] = []
    for parameter in command.params:
        if parameter is skip:
            continue
        always = next((ALWAYS[o] for o in parameter.opts if o in ALWAYS), None)
        if always is not None:
            options += value_args(parameter, always)
        if not parameter.required and not isinstance(parameter, click.Argument):
            continue
        target = arguments if isinstance(parameter, click.Argument) else options
        target += value_args(parameter, filler(parameter))
    return options + arguments


def with_value(command: Command, parameter: click.Parameter, value: str) -> list[str]:
    args = required_args(command, skip=parameter)
    given = value_args(parameter, value)
    if isinstance(parameter, click.Argument):
        return args + given
    return given + args


# ------------------------------------------------------------------------------- cases


def cases() -> Iterator[Case]:
    for command in commands():
        yield from argument_cases(command)
        if command.name in ARGUMENTS_ONLY:
            continue
        yield from file_cases(command)
        if command.name not in SERVES_FOREVER:
            yield from unreachable_cases(command)


def argument_cases(command: Command) -> Iterator[Case]:
    bad = frozenset({BAD_INPUT})
    base = required_args(command)
    yield Case(f"{command.name}: unknown option", (*command.path, "--no-such-option", *base), bad)
    for parameter in command.params:
        if isinstance(parameter, click.Option) and isinstance(
            parameter.type, click.types.IntParamType | click.types.FloatParamType
        ):
            argv = with_value(command, parameter, "not-a-number")
            label = f"{command.name}: {option_name(parameter)} not a number"
            yield Case(label, (*command.path, *argv), bad)
            break
    if any(p.required for p in command.params):
        yield Case(f"{command.name}: required parameters missing", command.path, bad)


def file_cases(command: Command) -> Iterator[Case]:
    for parameter in command.params:
        if not takes_path(parameter):
            continue
        label = (
            option_name(parameter)
            if isinstance(parameter, click.Option)
            else parameter.human_readable_name
        )
        for kind, path in BAD_FILES.items():
            expected = frozenset({BAD_INPUT})
            writes_into_directory = (
                isinstance(parameter.type, click.Path) and not parameter.type.file_okay
            )
            fine = (
                ("missing", "binary", "directory")
                if writes_into_directory
                else ("missing", "binary")
            )
            if is_output(command, parameter) and kind in fine:
                if command.name in SERVES_FOREVER:
                    continue  # a file it may create: the command would serve, not fail
                expected = frozenset(EXIT_CODES)
            argv = with_value(command, parameter, path)
            yield Case(
                f"{command.name}: {label} {kind}",
                (*command.path, *argv),
                expected,
                must_name=path if expected == {BAD_INPUT} else None,
            )
        envvar = parameter.envvar if isinstance(parameter.envvar, str) else None
        if envvar and not is_output(command, parameter):
            yield Case(
                f"{command.name}: ${envvar} binary",
                (*command.path, *required_args(command, skip=parameter)),
                frozenset({BAD_INPUT}),
                env=((envvar, BINARY),),
                must_name=BINARY,
            )


def unreachable_cases(command: Command) -> Iterator[Case]:
    """One case per server parameter of ``command`` (or one for Bigtable, set by env)."""
    servers = [
        p
        for p in command.params
        if p.name in SERVER_VALUES and p.name != "backend_type" and "--listen" not in p.opts
    ]
    inherited = {p.name for p in command.inherited} | {p.name for p in command.params}
    if not servers and inherited & BIGTABLE_PARAMS:
        yield Case(
            f"{command.name}: servers unreachable",
            (*command.path, *required_args(command)),
            frozenset({UNAVAILABLE}),
            stdin=a_signed_vaa(),
        )
    for server in servers:
        replaced = next((p for p in command.params if p.name == REPLACES.get(server.name)), None)
        argv = required_args(command, skip=replaced)
        argv = value_args(server, SERVER_VALUES[server.name or ""]) + argv
        if server.name == "cassandra_hosts":
            backend = next(p for p in command.params if p.name == "backend_type")
            argv = value_args(backend, SERVER_VALUES["backend_type"]) + argv
        yield Case(
            f"{command.name}: {option_name(server)} unreachable",
            (*command.path, *argv),
            frozenset({UNAVAILABLE}),
            stdin=a_signed_vaa(),
        )


def a_signed_vaa() -> str:
    """A real mainnet VAA (hex) from the shared vectors, or nothing when they are absent."""
    configured = os.environ.get("CHAINLOOM_VECTORS")
    repository = Path(__file__).resolve().parents[2]
    directory = Path(configured) if configured else repository.parent / "shared" / "vectors"
    try:
        vectors = json.loads((directory / "vaa_vectors.json").read_text())
    except (OSError, ValueError):
        return ""
    return str(vectors[0]["hex"]) + "\n"


COMMANDS = commands()
ALL_CASES = list(cases())


def run(case: Case, scratch: Path, dump: Path) -> Result:
    """Run ``case`` in a fresh working directory under ``scratch``."""
    workdir = Path(tempfile.mkdtemp(dir=scratch))
    make_inputs(workdir, dump)
    run_dir = workdir / "run"
    run_dir.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CHAINLOOM_", "BIGTABLE_")) or key == "CHAINLOOM_VECTORS"
    }
    env |= SERVER_ENV | {"CHAINLOOM_RUN": str(run_dir), "PYTHONUNBUFFERED": "1"}
    env |= dict(case.env)
    try:
        done = subprocess.run(
            [sys.executable, "-m", program_of(case.argv), *case.argv],
            check=False,
            input=case.stdin,
            capture_output=True,
            text=True,
            errors="replace",
            env=env,
            cwd=workdir,
            timeout=CASE_TIMEOUT,
        )
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"") + (expired.stderr or b"")
        text = output.decode(errors="replace") if isinstance(output, bytes) else output
        return Result(None, text)
    return Result(done.returncode, done.stdout + done.stderr)


@pytest.fixture(scope="module")
def scratch_dump(tmp_path_factory: pytest.TempPathFactory, vectors_dir: Path) -> tuple[Path, Path]:
    """A scratch directory for the cases' working directories, and a one-ledger dump."""
    scratch = tmp_path_factory.mktemp("sweep")
    dump = scratch / DUMP
    subprocess.run(
        [
            *(sys.executable, "-m", "chainloom_dev", "ledger", "generate", "--ledgers", "1"),
            *("--txs-per-ledger", "1", "--vectors", str(vectors_dir), "--out", str(dump)),
        ],
        check=True,
        capture_output=True,
        timeout=CASE_TIMEOUT,
    )
    return scratch, dump


@pytest.fixture(scope="module")
def results(scratch_dump: tuple[Path, Path]) -> dict[str, Result]:
    """Every case's result, run by a pool of processes (one pool for the whole module)."""
    scratch, dump = scratch_dump
    # Unreachable-server cases mostly wait on client deadlines: start them first, with more
    # threads than cores, so the waits overlap the CPU-bound short cases.
    ordered = sorted(ALL_CASES, key=lambda case: UNAVAILABLE not in case.expected)
    workers = max(4, min(12, 4 * (os.cpu_count() or 1)))
    with ThreadPoolExecutor(workers) as pool:
        done = pool.map(lambda case: run(case, scratch, dump), ordered)
        return dict(zip([c.id for c in ordered], done, strict=True))


def test_the_sweep_covers_every_command():
    """Every leaf command is swept, and the sweep has the cases it promises."""
    for command in commands():
        assert any(case.argv[: len(command.path)] == command.path for case in ALL_CASES)
    ids = {case.id for case in ALL_CASES}
    assert "relayer listen: --config binary" in ids
    assert "ledger generate: --vectors binary" in ids
    assert "relayer queues: --redis-url unreachable" in ids
    assert "events get: servers unreachable" in ids


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in ALL_CASES])
def test_fails_in_one_line(case: Case, results: dict[str, Result]) -> None:
    result = results[case.id]
    command = f"{program_of(case.argv)} {' '.join(case.argv)}"
    shown = f"{command}\n--- exit {result.code} ---\n{result.output[-3000:]}"
    assert result.code is not None, f"still running after {CASE_TIMEOUT}s:\n{shown}"
    assert "Traceback" not in result.output, shown
    assert result.code in EXIT_CODES, shown
    assert result.code in case.expected, f"expected exit {sorted(case.expected)}:\n{shown}"
    if case.must_name is not None:
        assert case.must_name in result.output, f"the message does not name the file:\n{shown}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_command_exits_130_in_one_line(signum: signal.Signals, tmp_path: Path):
    """A command that is not a server (here a spy watcher retrying a closed port) exits 130."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
    argv = ["spy", "subscribe", "--address", CLOSED, "--connect-timeout", "0"]
    with subprocess.Popen(
        [sys.executable, "-m", "chainloom_dev", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env | {"CHAINLOOM_RUN": str(tmp_path)},
        # A shell running the tests in the background ignores SIGINT; the command must not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    ) as process:
        assert process.stderr is not None
        first = process.stderr.readline()  # the first failed attempt: the command is running
        assert CLOSED in first
        process.send_signal(signum)
        _, rest = process.communicate(timeout=CASE_TIMEOUT)
    assert process.returncode == 130, first + rest
    assert "Traceback" not in rest
    assert rest.rstrip().splitlines()[-1] == "interrupted"


# ------------------------------------------------------------------- documented exit codes

SECRET = "sweep-password"
"""A password in the URLs of the cases below: it must never be shown."""

DOCUMENTED_CASES = [
    Case(
        "spark run: --master not a Spark master",
        ("spark", "run", "--master", "local[x]", "vaa-ingest", "--input", TEXT, "--table", "t"),
        frozenset({BAD_INPUT}),
        must_name="--master",
    ),
    Case(
        "spark run: $CHAINLOOM_SPARK__MASTER not a Spark master",
        ("spark", "run", "vaa-ingest", "--input", TEXT, "--table", "t"),
        frozenset({BAD_INPUT}),
        must_name="spark.master",
        env=(("CHAINLOOM_SPARK__MASTER", "local[0]"),),
    ),
    Case(
        "events scan: --from-seq after --to-seq",
        ("events", "scan", "--chain", "2", "--from-seq", "10", "--to-seq", "5"),
        frozenset({BAD_INPUT}),
        must_name="--from-seq 10 is after --to-seq 5",
    ),
    Case(
        "events counts: --from after --to",
        ("events", "counts", "--from", "2023-01-05", "--to", "2023-01-01"),
        frozenset({BAD_INPUT}),
        must_name="--from 2023-01-05 is after --to 2023-01-01",
    ),
    Case(
        "relayer work: --redis-url with a password unreachable",
        (
            "relayer",
            "work",
            "--chain",
            "2",
            "--wallet-file",
            WALLET,
            "--redis-url",
            f"redis://:{SECRET}@{CLOSED}/0",
        ),
        frozenset({UNAVAILABLE}),
        must_name=str(CLOSED_PORT),
    ),
    *(
        Case(
            f"{' '.join(argv)}: {where} {url}",
            (*argv, *(["--redis-url", url] if where == "--redis-url" else [])),
            frozenset({BAD_INPUT}),
            must_name="redis.url",
            env=(("CHAINLOOM_REDIS__URL", url),) if where == "env" else (),
        )
        for argv in (("config", "show", "--service", "relayer"), ("relayer", "queues"))
        for where in ("env", "--redis-url")
        if not (where == "--redis-url" and argv[0] == "config")
        for url in (
            f"redis://:{SECRET}@127.0.0.1:notaport/0",
            f"redis://:{SECRET}@127.0.0.1:99999/0",
            "http://127.0.0.1:6379/0",
            "redis://127.0.0.1:6379/zz",
        )
    ),
]
"""Invocations whose exit code once contradicted docs/exit-codes.md (issue 23 §8)."""


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in DOCUMENTED_CASES])
def test_exits_with_the_documented_code(case: Case, scratch_dump: tuple[Path, Path]) -> None:
    result = run(case, *scratch_dump)
    shown = f"chainloom {' '.join(case.argv)}\n--- exit {result.code} ---\n{result.output[-3000:]}"
    assert result.code in case.expected, f"expected exit {sorted(case.expected)}:\n{shown}"
    assert "Traceback" not in result.output, shown
    assert len(result.output.strip().splitlines()) == 1, shown
    assert case.must_name is not None
    assert case.must_name in result.output, shown
    assert SECRET not in result.output, shown


def test_a_settings_file_with_a_bad_redis_url_is_refused_naming_the_field(tmp_path: Path):
    """The file layer goes through the same check as the environment and the flags."""
    config = tmp_path / "relayer.yaml"
    config.write_text(f'redis:\n  url: "redis://:{SECRET}@127.0.0.1:99999/0"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
    for argv in (("config", "show", "--service", "relayer"), ("relayer", "queues")):
        done = subprocess.run(
            [sys.executable, "-m", "chainloom", *argv, "--config", str(config)],
            capture_output=True,
            text=True,
            env=env | {"CHAINLOOM_RUN": str(tmp_path)},
            timeout=CASE_TIMEOUT,
            check=False,
        )
        assert done.returncode == BAD_INPUT, done.stderr
        assert done.stderr.startswith(f"error: {config}: redis.url: "), done.stderr
        assert SECRET not in done.stdout + done.stderr


def test_relayer_listen_without_redis_keeps_serving_and_is_not_ready(tmp_path: Path):
    """A listener whose Redis is unreachable stays up and answers /readyz with 503 (so
    Kubernetes keeps it out of the Service while it retries), and stops cleanly (exit 0)."""
    import urllib.error
    import urllib.request

    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
    argv = [
        "relayer",
        "listen",
        "--no-spy",
        "--rest-port",
        "0",
        "--redis-url",
        f"redis://{CLOSED}/0",
    ]
    with subprocess.Popen(
        [sys.executable, "-m", "chainloom", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env | {"CHAINLOOM_RUN": str(tmp_path)},
    ) as process:
        assert process.stderr is not None
        line = ""
        while "REST on" not in line:
            line = process.stderr.readline()
            assert line, "the listener exited before serving"
        base = "http://" + line.rsplit(" ", 1)[-1].strip()
        for look in range(2):  # still there, still not ready, a while later
            time.sleep(2.0 * look)
            with pytest.raises(urllib.error.HTTPError) as answer:
                urllib.request.urlopen(base + "/readyz", timeout=10)
            answer.value.close()
            assert answer.value.code == 503
            assert process.poll() is None, "the listener stopped while Redis was unreachable"
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=CASE_TIMEOUT)
    assert process.returncode == 0, rest
    assert "Traceback" not in rest


def test_operator_run_against_an_unreachable_api_server_fails_in_one_line(tmp_path: Path):
    """kopf's retries are logged one line each; the outage ends in one error line, exit 4:
    no traceback, no "Task exception was never retrieved"."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"https://{CLOSED}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINLOOM_")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "chainloom",
            "operator",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--liveness",
            "",
        ],
        capture_output=True,
        text=True,
        env=env | {"CHAINLOOM_RUN": str(tmp_path)},
        timeout=180,
        check=False,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == UNAVAILABLE, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "never retrieved" not in done.stderr, done.stderr[-3000:]
    assert lines[-1].startswith("error: the Kubernetes API server is unreachable"), lines[-1]
    assert all(line.startswith(("20", "error: ")) for line in lines), done.stderr[-3000:]
