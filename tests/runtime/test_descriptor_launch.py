"""Host ``TensorDescriptor`` launches (stub backends, fake compiler): the companion kernel
receives the spread fields positionally; a repeated launch with fresh descriptor objects (what
tutorial code builds per call) takes the descriptor fast path, which must hand the launcher
exactly what the general route does -- for every specialisation, after any change to a
descriptor, per launch stream for tensor maps -- and leave wrong input to the same errors."""
from __future__ import annotations

import numpy as np
import pytest

import naiad
from naiad.tools.tensor_descriptor import TensorDescriptor


@naiad.jit
def copy_tile(src_desc, dst_desc, row, BR: "tl.constexpr"):
    pass


def _companion(fn):
    (companion,) = fn.__dict__["_naiad_descriptor_kernels"].values()
    return companion


def test_repeated_descriptor_launches_take_the_warm_path(stub, fake_compiler):
    rng = np.random.default_rng(21)
    src = rng.standard_normal((48, 40)).astype(np.float32)
    dst = np.full((48, 40), np.nan, np.float32)
    for row in (16, 32, 16):
        copy_tile[(3,)](TensorDescriptor.from_tensor(src, [16, 8]),
                        TensorDescriptor.from_tensor(dst, [16, 8]), row, BR=16)
    assert len(fake_compiler.calls) == 1
    call = fake_compiler.calls[0]
    assert call["constexprs"]["src_desc__block"] == (16, 8)
    assert call["constexprs"]["dst_desc__padding"] == "zero"
    launches = stub.launcher.launches
    assert len(launches) == 3
    for launch, row in zip(launches, (16, 32, 16)):
        args = launch["args"]
        assert args[0] is src and list(args[1:5]) == [48, 40, 40, 1]
        assert args[5] is dst and args[-1] == row
    from naiad.runtime.launch import runtime_of

    # once warm, each launch runs the generated warm path (not a slow bind hitting the cache)
    rt = runtime_of(_companion(copy_tile))
    before = rt.warm_launches
    for row in (0, 32):
        copy_tile[(3,)](TensorDescriptor.from_tensor(src, [16, 8]),
                        TensorDescriptor.from_tensor(dst, [16, 8]), row, BR=16)
    assert rt.warm_launches == before + 2 and len(fake_compiler.calls) == 1


def test_descriptor_after_a_defaulted_parameter_is_refused(stub, fake_compiler):
    @naiad.jit
    def two(a_desc, n=4, b_desc=None):
        pass

    x = np.zeros((16, 16), np.float32)
    with pytest.raises(naiad.NaiadError, match="follows parameter .n., left to its default"):
        two[(1,)](TensorDescriptor.from_tensor(x, [16, 16]),
                  b_desc=TensorDescriptor.from_tensor(x, [16, 16]))


# -- the fast path ----------------------------------------------------------------------------


def _same_launch(a: dict, b: dict) -> None:
    """Two recorded launches passed the kernel the same thing (arrays by identity)."""
    assert a["handle"] == b["handle"] and a["grid"] == b["grid"]
    assert a["arg_types"] == b["arg_types"] and a["stream"] == b["stream"]
    assert len(a["args"]) == len(b["args"])
    for x, y in zip(a["args"], b["args"]):
        assert x is y if hasattr(x, "dtype") else (type(x), x) == (type(y), y)


@pytest.fixture
def spread_calls(monkeypatch):
    """Counts launches that took the general route (spreading the descriptors anew)."""
    from naiad.runtime import descriptor_args

    calls = []
    general = descriptor_args.launch_spread

    def counting(*args, **kwargs):
        calls.append(args[2])
        return general(*args, **kwargs)

    monkeypatch.setattr(descriptor_args, "launch_spread", counting)
    return calls


def test_fast_path_launches_what_the_general_route_launches(stub, fake_compiler, spread_calls):
    """Per call: launched twice (new descriptor objects, as tutorial code makes them; the
    repeat always takes the fast path), then once by the general route directly. The launcher
    gets the same kernel, arguments, types and grid each time."""
    from naiad.runtime import descriptor_args

    rng = np.random.default_rng(5)
    src = rng.standard_normal((48, 40)).astype(np.float32)
    dst = np.full((48, 40), np.nan, np.float32)
    calls = [((3,), (17,), {"BR": 16}),             # row without facts
             ((3,), (1,), {"BR": 16}),              # row == 1
             ((3,), (32,), {"BR": 16}),             # row % 16 == 0: its own specialisation
             ((3,), (-5,), {"BR": 16}),             # keyed as 17 is: no new route needed
             ((3,), (1 << 40,), {"BR": 16}),        # an i64 row
             ((2, 2), (17,), {"BR": 32, "num_warps": 8}),
             ((3,), (17, 16), {})]                  # BR positionally
    launches = stub.launcher.launches
    for grid, rest, kw in calls:
        for attempt in range(2):
            before = len(spread_calls)
            copy_tile[grid](TensorDescriptor.from_tensor(src, [16, 8]),
                            TensorDescriptor.from_tensor(dst, [16, 8]), *rest, **kw)
        assert len(spread_calls) == before, (rest, kw)      # the repeat: fast path
        descriptor_args.launch_spread(copy_tile, grid, (TensorDescriptor.from_tensor(src, [16, 8]),
                                      TensorDescriptor.from_tensor(dst, [16, 8])) + rest, kw,
                                      None)
        _same_launch(launches[-2], launches[-1])
        assert launches[-1]["args"][0] is src and launches[-1]["args"][5] is dst
        assert launches[-1]["args"][-1] == rest[0]
    # each specialisation the calls need was compiled once
    keys = [(c["signature"]["row"], str(c["specialization"].get("row")), c["constexprs"]["BR"],
             c["options"].get("num_warps")) for c in fake_compiler.calls]
    assert len(keys) == len(set(keys)) == 5, keys


def test_a_changed_descriptor_is_never_served_a_stale_launch(stub, fake_compiler, spread_calls):
    """Block shape assigned (as an autotune pre_hook does) or changed in place, shape, strides
    and base changed on the same descriptor object: each launch passes the fields it has."""
    rng = np.random.default_rng(6)
    src = rng.standard_normal((64, 80)).astype(np.float32)
    other = rng.standard_normal((64, 80)).astype(np.float32)
    dst = np.full((64, 80), np.nan, np.float32)
    a = TensorDescriptor.from_tensor(src, [16, 8])
    b = TensorDescriptor.from_tensor(dst, [16, 8])
    launches = stub.launcher.launches

    def launch_and_check(base, shape, strides, block):
        copy_tile[(1,)](a, b, 0, BR=16)
        copy_tile[(1,)](a, b, 0, BR=16)       # the second through the fast path
        _same_launch(launches[-2], launches[-1])
        args = launches[-1]["args"]
        assert args[0] is base and list(args[1:5]) == shape + strides
        assert fake_compiler.calls[-1]["constexprs"]["src_desc__block"] == block

    launch_and_check(src, [64, 80], [80, 1], (16, 8))
    a.block_shape = [32, 16]                  # tutorial 06/09's pre_hook
    launch_and_check(src, [64, 80], [80, 1], (32, 16))
    a.block_shape[1] = 8                      # in place
    launch_and_check(src, [64, 80], [80, 1], (32, 8))
    a.shape = [40, 80]
    launch_and_check(src, [40, 80], [80, 1], (32, 8))
    a.shape, a.strides = [32, 40], [160, 1]   # every other row
    launch_and_check(src, [32, 40], [160, 1], (32, 8))
    a.base = other
    launch_and_check(other, [32, 40], [160, 1], (32, 8))
    # a new base of the same kind is read on every launch: no new route for it
    assert len(spread_calls) == 5


def test_wrong_input_raises_the_same_error_once_the_fast_path_knows_the_call(stub,
                                                                              fake_compiler):
    rng = np.random.default_rng(7)
    src = rng.standard_normal((48, 40)).astype(np.float32)
    dst = np.full((48, 40), np.nan, np.float32)

    def call(row):
        copy_tile[(1,)](TensorDescriptor.from_tensor(src, [16, 8]),
                        TensorDescriptor.from_tensor(dst, [16, 8]), row, BR=16)

    with pytest.raises(naiad.NaiadError) as first:
        call("not a row")
    call(16)
    call(16)
    with pytest.raises(naiad.NaiadError) as again:
        call("not a row")
    assert str(again.value) == str(first.value) and "row" in str(first.value)
    with pytest.raises(naiad.NaiadError, match="takes 4 arguments, got 5"):
        copy_tile[(1,)](TensorDescriptor.from_tensor(src, [16, 8]),
                        TensorDescriptor.from_tensor(dst, [16, 8]), 16, 16, 7)


def test_fields_are_checked_at_construction_each_time():
    """The memo of checked fields never lets a bad descriptor through: each rule still fires
    after a good descriptor of the same tensor was built; non-integers are refused."""
    x = np.zeros((64, 48), np.float32)
    TensorDescriptor.from_tensor(x, [16, 16])
    from naiad.tools.tensor_descriptor import TensorDescriptorError

    for fields, says in [(([64, 48], [48, 1], [16, 12]), "powers of 2"),
                         (([64, 48], [48, 2], [16, 16]), "Last dimension must be contiguous"),
                         (([64, 48], [47, 1], [16, 16]), "16-byte aligned"),
                         (([64, 48.5], [48, 1], [16, 16]), "sequence of ints"),
                         (([64, 48], [48, 1], ["16", 16]), "sequence of ints"),
                         (([64], [48, 1], [16, 16]), "rank mismatch")]:
        with pytest.raises(TensorDescriptorError, match=says):
            TensorDescriptor(x, *fields)
    with pytest.raises(TensorDescriptorError, match="base must be 16-byte aligned"):
        TensorDescriptor(np.zeros(64 * 48 + 1, np.float32)[1:].reshape(64, 48),
                         [64, 48], [48, 1], [16, 16])
    d = TensorDescriptor(x, (np.int64(64), 48), [48, 1], [16, 16.0])  # integral: taken
    assert d.shape == [64, 48] and all(type(v) is int for v in d.shape + d.block_shape)
    d.block_shape.append(4)                  # the fields are the descriptor's own lists
    assert TensorDescriptor.from_tensor(x, [16, 16]).block_shape == [16, 16]


def test_cache_clear_and_new_source_make_new_companions(stub, fake_compiler):
    src = np.zeros((48, 40), np.float32)
    dst = np.full((48, 40), np.nan, np.float32)

    @naiad.jit
    def fill_tile(src_desc, dst_desc, row, BR: "tl.constexpr"):
        pass

    def call():
        fill_tile[(1,)](TensorDescriptor.from_tensor(src, [16, 8]),
                        TensorDescriptor.from_tensor(dst, [16, 8]), 16, BR=16)

    call()
    call()
    first = _companion(fill_tile)
    assert len(fake_compiler.calls) == 1
    fill_tile.cache_clear()
    call()
    second = _companion(fill_tile)
    assert second is not first and len(fake_compiler.calls) == 1   # (the on-disk cache stays)
    fill_tile._unsafe_update_src(fill_tile.src.replace("pass", "x = 1"))
    call()
    call()
    assert "x = 1" in _companion(fill_tile).source and "x = 1" not in second.source
    assert len(fake_compiler.calls) == 2


class MapLauncher:
    """A compiled stub target's launcher with hardware tensor maps, as NVIDIA's has: one map
    per distinct descriptor (a fake device array), asked for with the launch's stream."""

    @staticmethod
    def install(plugin):
        from naiad_stub_backend import FakeDeviceArray, RecordingLauncher

        class Launcher(RecordingLauncher):
            def __init__(self):
                super().__init__(device_pointers=True)
                self.asked, self.made, self.stream = [], {}, 0

            def current_stream(self):
                return self.stream

            def tensor_map(self, desc, stream=None):
                fields = (desc.base.ptr, tuple(desc.shape), tuple(desc.strides),
                          tuple(desc.block_shape))
                self.asked.append((fields, stream))
                if desc.block_shape[0] > 64:
                    return None, "a block of over 64 rows (the test's rule)"
                if fields not in self.made:
                    self.made[fields] = FakeDeviceArray(0x90000 + 0x100 * len(self.made),
                                                        np.uint8)
                return self.made[fields], ""

        plugin.launcher = Launcher()
        return plugin.launcher


@pytest.fixture
def tma_stub(isolated_pm):
    from naiad_stub_backend import StubBackend

    plugin = StubBackend("tma", compiled=True)
    MapLauncher.install(plugin)
    isolated_pm.register(plugin, name="tma-plugin")
    with naiad.target("tma"):
        yield plugin


def test_maps_are_asked_per_launch_stream_and_reach_the_kernel(tma_stub, fake_compiler,
                                                                spread_calls):
    from naiad.runtime import descriptor_args
    from naiad_stub_backend import FakeDeviceArray

    launcher = tma_stub.launcher
    src, dst = FakeDeviceArray(0x10000, np.float32), FakeDeviceArray(0x20000, np.float32)

    def descs(rows=16):
        return (TensorDescriptor(src, [48, 40], [40, 1], [rows, 8]),
                TensorDescriptor(dst, [48, 40], [40, 1], [16, 8]))

    def check(stream_asked, stream_given=None):
        kw = {} if stream_given is None else {"stream": stream_given}
        copy_tile[(3,)](*descs(), 16, BR=16, **kw)
        asked = len(launcher.asked)
        copy_tile[(3,)](*descs(), 16, BR=16, **kw)          # fast: nothing asked again
        assert len(launcher.asked) == asked
        assert {s for _, s in launcher.asked[-2:]} == {stream_asked}
        fast = launcher.launches[-1]
        assert fast["stream"] == stream_given
        src_map = launcher.made[(src.ptr, (48, 40), (40, 1), (16, 8))]
        dst_map = launcher.made[(dst.ptr, (48, 40), (40, 1), (16, 8))]
        assert fast["args"] == [src.ptr, 48, 40, 40, 1, src_map.ptr,
                                dst.ptr, 48, 40, 40, 1, dst_map.ptr, 16]
        descriptor_args.launch_spread(copy_tile, (3,), descs() + (16,), dict(BR=16, **kw),
                                      stream_given)
        _same_launch(launcher.launches[-1], fast)

    check(0)
    launcher.stream = 5                  # torch.cuda.set_stream(...): new records, new copies
    check(5)
    check(9, stream_given=9)
    assert len(spread_calls) == 1 + 3    # learnt once (a new stream needs records only), checks
    copy_tile[(3,)](*descs(rows=128), 16, BR=16)              # declined: the portable kernel
    assert fake_compiler.calls[-1]["constexprs"]["src_desc__portable"] == \
        "a block of over 64 rows (the test's rule)"
    assert "src_desc__tensor_map" not in fake_compiler.calls[-1]["signature"]
    assert launcher.launches[-1]["args"][:6] == [src.ptr, 48, 40, 40, 1, dst.ptr]


def test_autotune_pre_hook_block_shapes_reach_every_launch(stub, monkeypatch):
    """Tutorial 09's pattern: descriptors built with a dummy block on every call, each config's
    pre_hook assigns the block shapes on the same descriptor objects. Every launch -- while
    tuning, config after config on the same objects, and after -- gets the block of the config
    it runs."""
    import json

    import naiad.compiler
    from naiad_stub_backend import FakeCompiler

    monkeypatch.setattr(naiad.compiler, "compile", FakeCompiler(sleep_ms={16: 2.0, 32: 0.2}))

    def set_blocks(nargs):
        nargs["src_desc"].block_shape = [nargs["BLOCK"], 8]
        nargs["dst_desc"].block_shape = [nargs["BLOCK"], 8]

    @naiad.autotune(configs=[naiad.Config({"BLOCK": 16}, pre_hook=set_blocks),
                             naiad.Config({"BLOCK": 32}, pre_hook=set_blocks)],
                    key=["row"], warmup=1, rep=4)
    @naiad.jit
    def tuned(src_desc, dst_desc, row, BLOCK: "tl.constexpr"):
        pass

    rng = np.random.default_rng(8)
    src = rng.standard_normal((64, 40)).astype(np.float32)
    dst = np.full((64, 40), np.nan, np.float32)
    for _ in range(4):
        tuned[(2,)](TensorDescriptor.from_tensor(src, [1, 1]),
                    TensorDescriptor.from_tensor(dst, [1, 1]), 16)
    assert tuned.best_config.kwargs == {"BLOCK": 32}
    blocks = []
    for launch in stub.launcher.launches:
        compiled = json.loads(stub.launcher.loads[launch["handle"][2]]["binary"])
        ce = compiled["constexprs"]
        block = int(ce["BLOCK"])
        assert ce["src_desc__block"] == ce["dst_desc__block"] == repr((block, 8))
        blocks.append(block)
    assert set(blocks) == {16, 32} and blocks[-3:] == [32] * 3


def test_do_not_specialize_names_the_same_parameters_in_the_companion(stub, fake_compiler):
    """By position or by name: the companion's parameters sit at other positions; a
    descriptor parameter stands for its shape and stride integers."""
    src = np.zeros((48, 32), np.float32)

    @naiad.jit(do_not_specialize=[2, "src_desc"])
    def unspecialized(src_desc, dst_desc, row, BR: "tl.constexpr"):
        pass

    unspecialized[(1,)](TensorDescriptor.from_tensor(src, [16, 8]),
                        TensorDescriptor.from_tensor(src, [16, 8]), 32, BR=16)
    spec = fake_compiler.calls[-1]["specialization"]
    assert "row" not in spec and not any(n.startswith("src_desc__s") for n in spec)
    assert spec["dst_desc__shape_0"] == spec["dst_desc__stride_0"] == {"divisibility": 16}


def test_a_launch_observer_sees_each_descriptor_launch_once(stub, fake_compiler, monkeypatch):
    """naiad.profiler's hook wraps ``kernel[grid]``: the first (general route) and later (fast
    path) launches are each one observed launch of the kernel itself."""
    from naiad.runtime import launch_hooks

    seen = []

    def observer(fn, grid, launch):
        seen.append(fn)
        return launch

    monkeypatch.setattr(launch_hooks, "observer", observer)
    src = np.zeros((48, 40), np.float32)
    for _ in range(3):
        copy_tile[(1,)](TensorDescriptor.from_tensor(src, [16, 8]),
                        TensorDescriptor.from_tensor(src, [16, 8]), 16, BR=16)
    assert seen == [copy_tile] * 3 and len(stub.launcher.launches) == 3
