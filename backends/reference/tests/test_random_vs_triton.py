"""tl.rand/randint/randn are bit for bit Triton's streams: compared with Triton's own interpreter
(TRITON_INTERPRET=1 on torch CPU tensors, in a child process so its settings stay there)."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import naiad
from triton_random_kernels import build

N = 128
SEEDS = [0, 12345, 2 ** 40 + 17, -5]

_TRITON_SIDE = textwrap.dedent(f"""
    import json, os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, {os.path.dirname(__file__)!r})
    import numpy as np, torch, triton, triton.language as tl
    from triton_random_kernels import build
    kernel = build('triton')
    out = {{}}
    for seed in {SEEDS!r}:
        t = torch.zeros(8 * {N}, dtype=torch.int32)
        kernel[(1,)](t, seed, {N})
        out[str(seed)] = t.numpy().view(np.uint32).tolist()
    k64 = build('triton', 'philox64_streams')
    for seed in {SEEDS!r}:
        t = torch.zeros(2 * {N}, dtype=torch.int64)
        k64[(1,)](t, seed, {N})
        out["64:" + str(seed)] = [str(v) for v in t.numpy().view(np.uint64).tolist()]
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def triton_streams():
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        pytest.skip(f"Triton's interpreter is not installed here ({e})")
    proc = subprocess.run([sys.executable, "-c", _TRITON_SIDE], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"Triton's interpreter failed:\n{proc.stderr[-3000:]}")
    out = {}
    for k, v in json.loads(proc.stdout).items():
        if k.startswith("64:"):
            out[k] = np.array([int(x) for x in v], np.uint64)
        else:
            out[int(k)] = np.array(v, np.uint32)
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_streams_match_triton(triton_streams, seed):
    kernel = build('naiad')
    got = np.full(8 * N, 0xDEADBEEF, np.uint32)
    with naiad.target("reference"):
        kernel[(1,)](got, seed, N)
    want = triton_streams[seed]
    names = ["randint4x[0]", "randint4x[1]", "randint4x[2]", "randint4x[3]", "rand", "randn",
             "randint(int64 offsets)", "randn4x[3]"]
    for i, name in enumerate(names):
        np.testing.assert_array_equal(got[i * N:(i + 1) * N], want[i * N:(i + 1) * N],
                                      err_msg=f"{name}, seed {seed}")


@pytest.mark.parametrize("seed", SEEDS)
def test_philox_4x64_matches_triton(triton_streams, seed):
    kernel = build("naiad", "philox64_streams")
    got = np.zeros(2 * N, np.uint64)
    with naiad.target("reference"):
        kernel[(1,)](got, seed, N)
    np.testing.assert_array_equal(got, triton_streams[f"64:{seed}"])
