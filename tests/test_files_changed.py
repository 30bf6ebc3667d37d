"""Files changed under a process that holds them (issue 38: a whole-suite run died of SIGBUS in
pytest's teardown). A SIGBUS is a mapped page that is gone: a key, .wtns or wasm cache file
truncated in place while mapped. Each path is run in a subprocess, so that a SIGBUS shows as a
failure (its return code) instead of killing pytest:

- the fault itself, reproduced on purpose: a mapped key truncated in place, then touched;
- a test process (or any reader) of a key read with resident=False (the one-shot command, a
  key's validation) or a .wtns: the file truncated or rewritten in place gives Truncated or
  Changed naming it, and what was already read is intact;
- the one-shot command: `cuzk prove` maps nothing of its key or witness;
- the daemon: a registered key truncated in place, then rewritten with another key, under
  `cuzk serve`: its jobs are refused with 422 naming the file, /healthz answers, and the key
  registered again is proved with (the double prover, and the real one with a mapped key).

The wasm cache's path is tests/test_witness.py's
test_a_cache_file_rewritten_in_place_does_not_kill_the_process.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest
from conftest import fixture_circuit
from serve_harness import cli_env, request, serve_daemon

TINY = fixture_circuit("tiny")
MULCHAIN = fixture_circuit("mulchain")
TOYHASH = fixture_circuit("toyhash")  # a key over 64 KiB: its sections are read when used


def _run(script: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(),
    )


def _rewrite_in_place(path, data: bytes) -> None:
    """What `cp new old` does: the same inode, truncated, then written."""
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(data)


def test_a_mapped_key_truncated_in_place_kills_the_process_that_touches_it(tmp_path):
    """The fault, on purpose: why nothing long-lived may map a file that can shrink."""
    key = tmp_path / "k.zkey"
    shutil.copy(MULCHAIN.zkey, key)
    out = _run(
        f"""
        import os, numpy as np
        from cuzk.formats.zkey import ZKey
        z = ZKey({str(key)!r}, private=False)  # mapped, as a daemon's proving processes
        a = z.points_h
        int(np.asarray(a).sum())
        os.truncate({str(key)!r}, 4096)
        print("touching", flush=True)
        int(np.asarray(a).sum())
        print("alive")
        """
    )
    assert out.returncode == -signal.SIGBUS, (out.returncode, out.stdout, out.stderr[-2000:])
    assert out.stdout.strip() == "touching"


def test_a_key_read_not_mapped_survives_truncation_and_rewriting(tmp_path):
    """resident=False (validation, the one-shot command) and .wtns files: read, never mapped.
    Sections already read stay intact; one read after the file shrank or changed raises
    Truncated or Changed naming the file; nothing of the file is in the process's maps."""
    key, wtns = tmp_path / "k.zkey", tmp_path / "w.wtns"
    shutil.copy(TOYHASH.zkey, key)
    shutil.copy(TOYHASH.witness(0), wtns)
    out = _run(
        f"""
        import os, numpy as np
        from cuzk.formats import read_wtns
        from cuzk.formats.errors import Changed, Truncated
        from cuzk.groth16.key import ProvingKey
        key, wtns = {str(key)!r}, {str(wtns)!r}
        pk = ProvingKey.open(key, resident=False)
        h = int(np.asarray(pk.zkey.points_h).sum())
        w = read_wtns(wtns)
        ws = int(w.values.sum())
        maps = open("/proc/self/maps").read()
        assert key not in maps and wtns not in maps, "mapped"
        os.truncate(key, 4096)
        os.truncate(wtns, 100)
        assert int(np.asarray(pk.zkey.points_h).sum()) == h and int(w.values.sum()) == ws
        try:
            pk.zkey.points_a
        except (Truncated, Changed) as e:
            print(type(e).__name__, e)
        # rewritten in place with the same size: refused too, never read as the same key
        data = open({str(TOYHASH.zkey)!r}, "rb").read()
        with open(key, "r+b") as f:
            f.truncate(0)
            f.write(data)
        pk = ProvingKey.open(key, resident=False)
        with open(key, "r+b") as f:
            f.seek(len(data) - 64)
            f.write(bytes(64))
        os.utime(key, ns=(1, 2 * 10**18))
        try:
            pk.zkey.points_b2
        except Changed as e:
            print(type(e).__name__, e)
        try:
            pk.check_unchanged()
        except Changed as e:
            print("check_unchanged", e)
        print("alive")
        """
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    lines = out.stdout.splitlines()
    assert lines[0].startswith(("Changed ", "Truncated ")) and str(key) in lines[0], lines
    assert "-> 4096 bytes" in lines[0] or "was 514978 bytes when opened" in lines[0], lines
    assert lines[1].startswith("Changed ") and "rewritten in place" in lines[1], lines
    assert lines[2].startswith("check_unchanged") and "rewritten in place" in lines[2], lines
    assert lines[-1] == "alive"


def test_the_one_shot_command_maps_neither_key_nor_witness(tmp_path):
    """`cuzk prove` reads its key section by section (dropping each when done) and its
    witness into memory: a file truncated under it can fail the command, never fault it."""
    out = _run(
        f"""
        from cuzk.formats import binfile
        from cuzk.groth16 import files
        seen = []
        real = binfile.BinFile.__init__
        def spy(self, path, kind, *args, **kw):
            real(self, path, kind, *args, **kw)
            seen.append((kind, self.private))
        binfile.BinFile.__init__ = spy
        import cuzk.groth16.stages as stages
        done = stages.done_with
        def watch(key, *sections):
            done(key, *sections)
            maps = open("/proc/self/maps").read()
            assert {str(TINY.zkey)!r} not in maps and {str(TINY.witness(0))!r} not in maps
            seen.append(sections)
        stages.done_with = watch
        files.run_prove({str(TINY.zkey)!r}, {str(TINY.witness(0))!r},
                        {str(tmp_path / "proof.json")!r}, {str(tmp_path / "public.json")!r})
        print(seen)
        """,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = eval(out.stdout.strip().splitlines()[-1])
    assert ("zkey", True) in seen and ("wtns", True) in seen, seen
    assert ("zkey", False) not in seen and ("wtns", False) not in seen, seen
    assert ("points_h",) in seen or any("points_h" in x for x in seen), seen  # watched
    assert (tmp_path / "proof.json").exists()


# ------------------------------------------------------------------------------ the daemon
def test_the_engine_says_how_a_registered_key_file_changed(tmp_path):
    """Engine.key_file_changed: None while the file is the one registered; then rewritten in
    place, replaced by another file (renamed over it), gone: each named, with the file."""
    from cuzk.engine import Engine
    from cuzk.testing import prover_double

    path = tmp_path / "k.json"
    prover_double.write_key(path)
    eng = Engine(prover="cuzk.testing.prover_double")  # registration needs no running engine
    kid = eng.register_key(path)
    assert eng.key_file_changed(kid) is None and eng.key_file_changed("0" * 16) is None
    _rewrite_in_place(path, path.read_bytes() + b" ")
    why = eng.key_file_changed(kid)
    assert str(path) in why and "rewritten in place" in why, why
    assert eng.register_key(path) != kid  # the double's id is its bytes': another key
    prover_double.write_key(tmp_path / "new.json", n_vars=32)
    os.replace(tmp_path / "new.json", path)
    assert "replaced by another file" in eng.key_file_changed(kid)
    path.unlink()
    assert "is gone" in eng.key_file_changed(kid)


def _job(key: str, wtns: bytes) -> dict:
    return {"key": key, "witnesses": [{"data": base64.b64encode(wtns).decode()}]}


def _wait_done(s, job_id: str) -> dict:
    code, _, out = request(s.url, "GET", f"/v1/jobs/{job_id}/result?wait=120", timeout=150)
    assert code == 200, out
    return out


def test_a_key_rewritten_under_the_daemon_is_refused_until_registered_again(tmp_path):
    """The double prover (keys read whole): a registered key truncated in place, then
    rewritten with another key. Jobs naming the old id get 422 naming the file; /healthz
    answers; the path registered again is the new key, and its jobs are done."""
    from cuzk.testing import prover_double

    root = tmp_path / "keys"
    root.mkdir()
    path = root / "k.json"
    prover_double.write_key(path, n_vars=64)
    wtns = prover_double.make_wtns(64, 1, tmp_path / "w.wtns")
    s = serve_daemon(tmp_path / "serve.log", root, "--prover", "cuzk.testing.prover_double").start()
    try:
        code, _, k = request(s.url, "POST", "/v1/keys", {"path": str(path)})
        assert code == 201, k
        old = k["key_id"]
        code, _, job = request(s.url, "POST", "/v1/jobs", _job(old, wtns))
        assert code == 201, job
        assert _wait_done(s, job["job_id"])["state"] == "done"
        os.truncate(path, 3)
        code, _, out = request(s.url, "POST", "/v1/jobs", _job(old, wtns))
        assert code == 422 and str(path) in out["error"] and old in out["error"], out
        assert "rewritten in place" in out["error"] and "register it again" in out["error"]
        assert request(s.url, "GET", "/healthz")[0] == 200
        raw = path.read_bytes()
        prover_double.write_key(tmp_path / "other.json", n_vars=64, domain_size=256)
        _rewrite_in_place(path, (tmp_path / "other.json").read_bytes())
        assert path.read_bytes() != raw
        code, _, out = request(s.url, "POST", "/v1/jobs", _job(old, wtns))
        assert code == 422 and str(path) in out["error"], out
        # named by path: registered again (the new key), then proved with
        code, _, job = request(s.url, "POST", "/v1/jobs", _job(str(path), wtns))
        assert code == 201 and job["key_id"] != old, job
        assert _wait_done(s, job["job_id"])["state"] == "done"
        assert request(s.url, "GET", "/healthz")[0] == 200
    finally:
        try:
            assert s.stop() == 0, s.log()
            assert "Traceback" not in s.log()
        finally:
            s.kill()


@pytest.mark.slow
def test_a_mapped_key_changed_under_the_daemon_never_kills_it(tmp_path):
    """The real prover, whose proving processes map keys: a key proved with (mapped in the
    synthesis and device processes) truncated in place, then rewritten with another key.
    The daemon stays up (/healthz 200, same pid), jobs of the old id get 422 naming the file,
    and the key registered again is proved with (valid proofs)."""
    root = tmp_path / "keys"
    root.mkdir()
    path = root / "k.zkey"
    shutil.copy(TINY.zkey, path)
    s = serve_daemon(tmp_path / "serve.log", root, "--self-verify").start()
    try:
        pid = s.pid
        code, _, k = request(s.url, "POST", "/v1/keys", {"path": str(path)})
        assert code == 201, k
        old = k["key_id"]
        tiny_w = TINY.witness(0).read_bytes()
        code, _, job = request(s.url, "POST", "/v1/jobs", _job(old, tiny_w))
        assert code == 201, job
        assert _wait_done(s, job["job_id"])["state"] == "done"
        # truncated in place while the daemon's processes hold it mapped
        os.truncate(path, 100)
        code, _, out = request(s.url, "POST", "/v1/jobs", _job(old, tiny_w))
        assert code == 422 and str(path) in out["error"], out
        assert request(s.url, "GET", "/healthz")[0] == 200
        code, _, out = request(s.url, "POST", "/v1/jobs", _job(str(path), tiny_w))
        assert code == 422 and "bytes missing" in out["error"], out  # registering: Truncated
        # rewritten in place with another key: registered again, proved with, valid
        _rewrite_in_place(path, MULCHAIN.zkey.read_bytes())
        mul_w = MULCHAIN.witness(0).read_bytes()
        code, _, job = request(s.url, "POST", "/v1/jobs", _job(str(path), mul_w))
        assert code == 201 and job["key_id"] != old, job
        done = _wait_done(s, job["job_id"])
        assert done["state"] == "done", done
        code, _, out = request(s.url, "POST", "/v1/jobs", _job(old, tiny_w))
        assert code == 422, out
        assert request(s.url, "GET", "/healthz")[0] == 200 and s.pid == pid
        assert s.proc.poll() is None
    finally:
        try:
            assert s.stop() == 0, s.log()
            assert "Traceback" not in s.log()
        finally:
            s.kill()
