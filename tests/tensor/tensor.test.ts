import assert from "node:assert/strict";
import { bf16ToNumber, numberToBf16, roundToDType } from "../../src/tensor/dtype.ts";
import { Random } from "../../src/tensor/random.ts";
import { Tensor } from "../../src/tensor/tensor.ts";

const arange = (n: number) => Array.from({ length: n }, (_, i) => i);
const bits = (v: number) => numberToBf16(v);

// ---------------------------------------------------------------------------------------
// bfloat16 / float16 rounding

Deno.test("bf16: exact values round-trip, -0 keeps its sign", () => {
  for (const v of [0, 1, -1, 2, 0.5, 1.5, -3.75, 256, 1 + 2 ** -7, 2 ** 127, 2 ** -126]) {
    assert.equal(bf16ToNumber(bits(v)), v, `${v}`);
  }
  assert.equal(bits(1), 0x3f80);
  assert.equal(bits(-2), 0xc000);
  assert.equal(bits(-0), 0x8000);
  assert.ok(Object.is(bf16ToNumber(0x8000), -0));
});

Deno.test("bf16: round to nearest, ties to even", () => {
  const ulp = 2 ** -7; // bf16 spacing in [1, 2)
  // Exactly half way between 1 (even, 0x3f80) and 1 + ulp (odd, 0x3f81): down to even.
  assert.equal(bits(1 + ulp / 2), 0x3f80);
  // Half way between 1 + ulp (odd) and 1 + 2ulp (even): up to even.
  assert.equal(bits(1 + 1.5 * ulp), 0x3f82);
  // Just above / below half way.
  assert.equal(bits(1 + ulp / 2 + ulp / 64), 0x3f81);
  assert.equal(bits(1 + ulp / 2 - ulp / 64), 0x3f80);
  // Negative values mirror.
  assert.equal(bits(-(1 + ulp / 2)), 0xbf80);
  assert.equal(bits(-(1 + 1.5 * ulp)), 0xbf82);
});

Deno.test("bf16: no double rounding through float32", () => {
  // 1 + 2^-8 + 2^-30 is above the bf16 tie, but rounds to the tie 1 + 2^-8 in float32;
  // a naive float64 -> float32 -> bf16 would then round down to 1.
  assert.equal(bits(1 + 2 ** -8 + 2 ** -30), 0x3f81);
  assert.equal(bits(1 + 2 ** -8 - 2 ** -30), 0x3f80);
  assert.equal(bits(1 + 3 * 2 ** -8 - 2 ** -30), 0x3f81);
});

Deno.test("bf16: NaN stays a quiet NaN, infinities keep their sign", () => {
  const nan = bits(NaN);
  assert.equal(nan & 0x7f80, 0x7f80, "exponent all ones");
  assert.ok((nan & 0x007f) !== 0, "mantissa non-zero");
  assert.ok((nan & 0x0040) !== 0, "quiet bit set");
  assert.ok(Number.isNaN(bf16ToNumber(nan)));
  assert.equal(bits(Infinity), 0x7f80);
  assert.equal(bits(-Infinity), 0xff80);
  assert.equal(bf16ToNumber(0x7f80), Infinity);
  assert.equal(bf16ToNumber(0xff80), -Infinity);
  // Signalling NaN bit patterns read back as NaN; re-encoding makes them quiet.
  assert.ok(Number.isNaN(bf16ToNumber(0x7f81)));
});

Deno.test("bf16: overflow goes to infinity at the rounding threshold", () => {
  const max = bf16ToNumber(0x7f7f); // (2 - 2^-7) * 2^127
  assert.equal(max, (2 - 2 ** -7) * 2 ** 127);
  const threshold = (2 - 2 ** -8) * 2 ** 127; // half way to 2^128: ties to even -> Inf
  assert.equal(bits(max), 0x7f7f);
  assert.equal(bits(threshold * (1 - 2 ** -20)), 0x7f7f);
  assert.equal(bits(threshold), 0x7f80);
  assert.equal(bits(3.4028234663852886e38), 0x7f80); // float32 max
  assert.equal(bits(1e39), 0x7f80); // beyond float32
  assert.equal(bits(-1e39), 0xff80);
  assert.equal(bits(Number.MAX_VALUE), 0x7f80);
});

Deno.test("bf16: subnormals", () => {
  const tiny = 2 ** -133; // smallest bf16 subnormal
  assert.equal(bits(tiny), 0x0001);
  assert.equal(bf16ToNumber(0x0001), tiny);
  assert.equal(bits(tiny / 2), 0x0000, "tie with 0 goes to even (0)");
  assert.equal(bits(tiny * 1.5), 0x0002, "tie between 1 and 2 goes to even (2)");
  assert.equal(bits(tiny * 0.75), 0x0001);
  assert.equal(bits(tiny / 2 + 2 ** -160), 0x0001, "just above the tie, below float32 range");
  assert.equal(bits(-tiny), 0x8001);
  assert.equal(bits(2 ** -200), 0x0000);
  assert.equal(bits(-(2 ** -200)), 0x8000);
  assert.equal(bf16ToNumber(0x007f), 127 * tiny); // largest subnormal
  assert.equal(bits(2 ** -126 - tiny / 4), 0x0080, "rounds up to the smallest normal");
});

Deno.test("float16: round to nearest even, overflow, subnormals, NaN", () => {
  const r = (v: number) => roundToDType(v, "float16");
  assert.equal(r(1 + 2 ** -11), 1); // tie -> even
  assert.equal(r(1 + 3 * 2 ** -11), 1 + 2 ** -9); // tie -> even (up)
  assert.equal(r(65504), 65504);
  assert.equal(r(65519), 65504);
  assert.equal(r(65520), Infinity); // half way to 2^16 -> Inf
  assert.equal(r(-1e6), -Infinity);
  assert.equal(r(2 ** -24), 2 ** -24); // smallest subnormal
  assert.equal(r(2 ** -25), 0); // tie -> even (0)
  assert.equal(r(3 * 2 ** -26), 2 ** -24);
  assert.ok(Number.isNaN(r(NaN)));
  // The tensor stores the same values.
  const t = Tensor.fromArray([1 + 2 ** -11, 65520, 2 ** -25, NaN, -Infinity], [5], "float16");
  const v = t.toFloat64Array();
  assert.deepEqual(Array.from(v.slice(0, 3)), [1, Infinity, 0]);
  assert.ok(Number.isNaN(v[3]));
  assert.equal(v[4], -Infinity);
});

Deno.test("roundToDType: float32, bfloat16 and int32", () => {
  assert.equal(roundToDType(0.1, "float32"), Math.fround(0.1));
  assert.equal(roundToDType(1 + 2 ** -8, "bfloat16"), 1);
  assert.equal(roundToDType(1 + 2 ** -8 + 2 ** -30, "bfloat16"), 1 + 2 ** -7);
  assert.equal(roundToDType(-2.7, "int32"), -2);
  const t = Tensor.fromArray([1 + 2 ** -8 + 2 ** -30, NaN, -Infinity], [3], "bfloat16");
  assert.ok(t.storage instanceof Uint16Array);
  assert.equal(t.storage[0], 0x3f81);
  const v = t.toFloat64Array();
  assert.equal(v[0], 1 + 2 ** -7);
  assert.ok(Number.isNaN(v[1]));
  assert.equal(v[2], -Infinity);
});

// ---------------------------------------------------------------------------------------
// Constructors

Deno.test("fromArray/zeros/ones/full: shapes, dtypes, contiguous strides", () => {
  const t = Tensor.fromArray([1, 2, 3, 4, 5, 6], [2, 3]);
  assert.equal(t.dtype, "float32");
  assert.deepEqual(t.shape, [2, 3]);
  assert.deepEqual(t.strides, [3, 1]);
  assert.equal(t.offset, 0);
  assert.equal(t.device, "cpu");
  assert.equal(t.numel, 6);
  assert.equal(t.rank, 2);
  assert.deepEqual(t.toArray(), [1, 2, 3, 4, 5, 6]);
  assert.ok(Object.isFrozen(t.shape) && Object.isFrozen(t.strides));
  assert.equal(String(t), "Tensor<float32>[2, 3] on cpu");

  const z = Tensor.zeros([2, 2], "bfloat16");
  assert.ok(z.storage instanceof Uint16Array);
  assert.deepEqual(z.toArray(), [0, 0, 0, 0]);
  assert.ok(Tensor.zeros([3], "float16").storage instanceof Float16Array);
  assert.ok(Tensor.zeros([3], "int32").storage instanceof Int32Array);
  assert.deepEqual(Tensor.ones([2], "float16").toArray(), [1, 1]);
  assert.deepEqual(Tensor.full([2], 1 + 2 ** -8 + 2 ** -30, "bfloat16").toArray(), [
    1 + 2 ** -7,
    1 + 2 ** -7,
  ]);
  assert.deepEqual(Tensor.full([3], 0.1).toArray(), new Array(3).fill(Math.fround(0.1)));
  assert.deepEqual(Tensor.fromArray([1.9, -1.9], [2], "int32").toArray(), [1, -1]);
});

Deno.test("fromData wraps storage without copying", () => {
  const data = new Float32Array([0, 1, 2, 3, 4, 5, 6, 7]);
  const t = Tensor.fromData(data, [2, 2], { strides: [1, 2], offset: 3 });
  assert.equal(t.storage, data);
  assert.deepEqual(t.toArray(), [3, 5, 4, 6]);
  data[3] = 30;
  assert.equal(t.toArray()[0], 30);
  assert.equal(Tensor.fromData(new Uint16Array([0x3f80]), [1]).dtype, "bfloat16");
  assert.equal(Tensor.fromData(new Float16Array([1]), [1]).dtype, "float16");
  assert.equal(Tensor.fromData(new Int32Array([1]), [1]).dtype, "int32");
  // Other typed arrays (possible from untyped JavaScript) are refused, not read as bf16 bits.
  const f64 = new Float64Array([1, 2]) as unknown as Float32Array;
  assert.throws(() => Tensor.fromData(f64, [2]), /Float64Array is not tensor storage/);
  assert.throws(() => new Tensor(f64, "bfloat16", [2]), TypeError);
  assert.throws(() => new Tensor(new Int16Array(2) as unknown as Uint16Array, "bfloat16", [2]));
});

Deno.test("random is deterministic per seed and respects its options", () => {
  const a = Tensor.random([4, 5], { seed: 42 });
  const b = Tensor.random([4, 5], { seed: 42 });
  const c = Tensor.random([4, 5], { seed: 43 });
  assert.deepEqual(a.toArray(), b.toArray());
  assert.notDeepEqual(a.toArray(), c.toArray());
  assert.ok(a.toArray().every((v) => v >= -1 && v < 1), "default uniform [-1, 1)");
  const u = Tensor.random([1000], { seed: 1, low: 2, high: 3 }).toArray();
  assert.ok(u.every((v) => v >= 2 && v <= 3));
  const h = Tensor.random([3], { seed: 42, dtype: "float16" });
  assert.equal(h.dtype, "float16");
  assert.deepEqual(
    h.toArray(),
    Tensor.random([3], { seed: 42 }).toArray().map((v) => Math.f16round(v)),
  );
  const n = Tensor.random([4000], { seed: 5, distribution: "normal", low: 10, high: 2 }).toArray();
  const mean = n.reduce((s, v) => s + v, 0) / n.length;
  const sd = Math.sqrt(n.reduce((s, v) => s + (v - mean) ** 2, 0) / n.length);
  assert.ok(Math.abs(mean - 10) < 0.2 && Math.abs(sd - 2) < 0.2, `${mean} ${sd}`);
  // The generator itself.
  const r1 = new Random(7);
  const r2 = new Random(7);
  for (let i = 0; i < 10; i++) assert.equal(r1.next(), r2.next());
  // Default seed is fixed too.
  assert.deepEqual(Tensor.random([3]).toArray(), Tensor.random([3]).toArray());
});

Deno.test("Tensor.random: one stream of the generator, across its fill's chunks, in every dtype", () => {
  // 40000 elements: the fill draws 16384 at a time, so two chunk boundaries fall inside, and
  // the normal draws' spare value (Box-Muller makes two) crosses them.
  const n = 40000;
  for (const distribution of ["uniform", "normal"] as const) {
    const rng = new Random(11);
    const expected = Array.from(
      { length: n },
      () => distribution === "normal" ? 3 + 0.5 * rng.normal() : -1 + 2 * rng.next(),
    );
    const options = {
      seed: 11,
      distribution,
      ...(distribution === "normal" ? { low: 3, high: 0.5 } : {}),
    };
    const f32 = Tensor.random([40, 1000], options).toArray();
    assert.deepEqual(f32, expected.map(Math.fround), `${distribution} float32`);
    const bf16 = Tensor.random([n], { ...options, dtype: "bfloat16" }).toArray();
    assert.deepEqual(
      bf16,
      expected.map((v) => bf16ToNumber(numberToBf16(v))),
      `${distribution} bf16`,
    );
  }
});

// ---------------------------------------------------------------------------------------
// Views

Deno.test("permute/transpose are views sharing storage", () => {
  const x = Tensor.fromArray(arange(24), [2, 3, 4]);
  const p = x.permute([2, 0, 1]);
  assert.equal(p.storage, x.storage);
  assert.deepEqual(p.shape, [4, 2, 3]);
  assert.deepEqual(p.strides, [1, 12, 4]);
  assert.equal(p.isContiguous(), false);
  // Logical row-major order of the view.
  const expected: number[] = [];
  for (let k = 0; k < 4; k++) {
    for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) expected.push(i * 12 + j * 4 + k);
  }
  assert.deepEqual(p.toArray(), expected);
  const t = x.transpose(0, 2);
  assert.deepEqual(t.shape, [4, 3, 2]);
  assert.equal(t.storage, x.storage);
  // A write through the view is seen by the base.
  t.slice(0, 1, 2).copy_(new Array(6).fill(-1));
  assert.deepEqual(x.toArray().filter((v) => v === -1).length, 6);
  assert.equal(x.toArray()[1], -1);
});

Deno.test("slice: negative indices, steps, clamping, empty results share storage", () => {
  const x = Tensor.fromArray(arange(10), [10]);
  assert.deepEqual(x.slice(0, 2, 5).toArray(), [2, 3, 4]);
  assert.deepEqual(x.slice(0, -3).toArray(), [7, 8, 9]);
  assert.deepEqual(x.slice(0, 1, -1, 3).toArray(), [1, 4, 7]);
  assert.deepEqual(x.slice(0, 0, 10, 4).toArray(), [0, 4, 8]);
  assert.deepEqual(x.slice(0, -100, 100).toArray(), arange(10));
  assert.deepEqual(x.slice(0, 5, 2).toArray(), []);
  assert.deepEqual(x.slice(0, 5, 2).shape, [0]);
  const s = x.slice(0, 1, 9, 2);
  assert.equal(s.storage, x.storage);
  assert.equal(s.offset, 1);
  assert.deepEqual(s.strides, [2]);
  const m = Tensor.fromArray(arange(12), [3, 4]);
  const col = m.slice(1, -1);
  assert.deepEqual(col.shape, [3, 1]);
  assert.deepEqual(col.toArray(), [3, 7, 11]);
  assert.deepEqual(m.slice(0, 1).slice(1, 0, 4, 2).toArray(), [4, 6, 8, 10]);
  assert.throws(() => x.slice(1, 0), /slice: dim 1 out of range for rank 1/);
  assert.throws(() => x.slice(0, 0, 5, 0), /step 0 must be an integer >= 1/);
  assert.throws(() => x.slice(0, 0, 5, -1), RangeError);
});

Deno.test("view vs reshape", () => {
  const x = Tensor.fromArray(arange(24), [2, 3, 4]);
  const v = x.view([6, 4]);
  assert.equal(v.storage, x.storage);
  assert.deepEqual(v.strides, [4, 1]);
  assert.deepEqual(x.view([-1]).shape, [24]);
  assert.deepEqual(x.view([4, -1]).shape, [4, 6]);
  // A permuted tensor can split or keep its dims, but not merge non-adjacent ones.
  const p = x.permute([0, 2, 1]); // [2, 4, 3], strides [12, 1, 4]
  const split = p.view([2, 2, 2, 3]);
  assert.equal(split.storage, x.storage);
  assert.deepEqual(split.strides, [12, 2, 1, 4]);
  assert.deepEqual(split.toArray(), p.toArray());
  assert.throws(() => p.view([8, 3]), RangeError); // stride 12 != 4 * 1: dims 0, 1 cannot merge
  // A stepped slice can merge dims whose strides line up (12 == 3 * 4).
  const stepped = x.slice(2, 0, 4, 2); // [2, 3, 2], strides [12, 4, 2]
  const merged = stepped.view([6, 2]);
  assert.equal(merged.storage, x.storage);
  assert.deepEqual(merged.strides, [4, 2]);
  assert.deepEqual(merged.toArray(), stepped.toArray());
  assert.deepEqual(stepped.view([12]).strides, [2]); // every other element of the storage
  assert.deepEqual(stepped.view([12]).toArray(), arange(12).map((i) => 2 * i));
  assert.throws(() => p.view([2, 12]), /view: shape \[2, 12\] is incompatible.*use reshape/);
  assert.throws(() => p.view([24]), RangeError);
  // reshape copies exactly when view cannot.
  const r = p.reshape([2, 12]);
  assert.notEqual(r.storage, x.storage);
  assert.equal(r.isContiguous(), true);
  assert.deepEqual(r.toArray(), p.toArray());
  const rv = x.reshape([3, 8]);
  assert.equal(rv.storage, x.storage);
  // Size-1 dims and slices.
  const s = x.slice(2, 1, 3); // [2, 3, 2], strides [12, 4, 1], offset 1
  assert.deepEqual(s.view([2, 3, 1, 2]).toArray(), s.toArray());
  assert.deepEqual(s.view([6, 2]).strides, [4, 1]);
  assert.deepEqual(s.view([6, 2]).toArray(), s.toArray());
  assert.throws(() => s.view([12]), RangeError); // stride 4 != 2 * 1
  assert.deepEqual(s.reshape([12]).toArray(), s.toArray());
  // Element count and inference errors.
  assert.throws(() => x.view([5, 5]), /view: shape \[5, 5\] does not hold 24 elements/);
  assert.throws(() => x.reshape([7, -1]), RangeError);
  assert.throws(() => x.view([-1, -1]), RangeError);
});

Deno.test("contiguous returns itself when contiguous, else a row-major copy", () => {
  const x = Tensor.fromArray(arange(6), [2, 3]);
  assert.equal(x.contiguous(), x);
  const t = x.transpose(0, 1);
  const c = t.contiguous();
  assert.notEqual(c.storage, x.storage);
  assert.deepEqual(c.strides, [2, 1]);
  assert.deepEqual(c.toArray(), [0, 3, 1, 4, 2, 5]);
  assert.equal(c.dtype, x.dtype);
  // Size-1 dims with odd strides still count as contiguous.
  const odd = Tensor.fromData(new Float32Array(6), [2, 1, 3], { strides: [3, 99, 1] });
  assert.equal(odd.isContiguous(), true);
  // clone always copies.
  const k = x.clone();
  assert.notEqual(k.storage, x.storage);
  assert.deepEqual(k.toArray(), x.toArray());
  // bf16 contiguous copy keeps the bit patterns.
  const b = Tensor.fromArray([1.5, NaN, -Infinity, 3], [2, 2], "bfloat16").transpose(0, 1);
  const bc = b.contiguous().toArray(); // transposed: [[1.5, -Inf], [NaN, 3]]
  assert.equal(bc[0], 1.5);
  assert.equal(bc[1], -Infinity);
  assert.ok(Number.isNaN(bc[2]));
  assert.equal(bc[3], 3);
});

Deno.test("rank 0 and rank 8", () => {
  const s = Tensor.fromArray([5], []);
  assert.equal(s.rank, 0);
  assert.equal(s.numel, 1);
  assert.deepEqual(s.strides, []);
  assert.equal(s.item(), 5);
  assert.deepEqual(s.view([1, 1]).toArray(), [5]);
  assert.deepEqual(Tensor.fromArray([3], [1, 1]).view([]).shape, []);
  assert.deepEqual(s.permute([]).toArray(), [5]);
  s.copy_([7]);
  assert.equal(s.item(), 7);
  assert.deepEqual(Tensor.zeros([]).toArray(), [0]);

  const shape = [2, 1, 2, 1, 2, 1, 2, 1];
  const e = Tensor.fromArray(arange(16), shape);
  assert.equal(e.rank, 8);
  assert.deepEqual(e.strides, [8, 8, 4, 4, 2, 2, 1, 1]);
  const p = e.permute([6, 4, 2, 0, 1, 3, 5, 7]);
  const expected: number[] = [];
  for (let d = 0; d < 2; d++) {
    for (let c = 0; c < 2; c++) {
      for (let b = 0; b < 2; b++) {
        for (let a = 0; a < 2; a++) expected.push(a * 8 + b * 4 + c * 2 + d);
      }
    }
  }
  assert.deepEqual(p.toArray(), expected);
  assert.deepEqual(p.contiguous().toArray(), expected);
});

Deno.test("empty tensors", () => {
  const z = Tensor.zeros([0, 3]);
  assert.equal(z.numel, 0);
  assert.deepEqual(z.toArray(), []);
  assert.deepEqual(z.strides, [3, 1]);
  assert.equal(z.isContiguous(), true);
  assert.deepEqual(z.view([3, 0]).shape, [3, 0]);
  assert.deepEqual(z.view([-1, 3, 0]).shape, [0, 3, 0]);
  assert.deepEqual(z.permute([1, 0]).toArray(), []);
  z.copy_([]);
  assert.throws(() => z.copy_([1]), RangeError);
  assert.deepEqual(Tensor.fromArray([], [2, 0, 4]).shape, [2, 0, 4]);
  // An empty view may sit anywhere, even at the end of its storage.
  const e = Tensor.fromData(new Float32Array(4), [0, 5], { offset: 4 });
  assert.equal(e.numel, 0);
  assert.throws(() => Tensor.fromArray([], [2, 0]).item(), /item: tensor has 0 elements/);
});

Deno.test("copy_ writes into strided views in logical order, rounding to the dtype", () => {
  const x = Tensor.zeros([3, 4]);
  x.transpose(0, 1).copy_(arange(12)); // logical order of the [4, 3] view
  assert.deepEqual(x.toArray(), [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]);
  const y = Tensor.full([10], -1, "bfloat16");
  y.slice(0, 1, 10, 3).copy_([1 + 2 ** -8 + 2 ** -30, 2, 3]);
  assert.deepEqual(y.toArray(), [-1, 1 + 2 ** -7, -1, -1, 2, -1, -1, 3, -1, -1]);
  // From a tensor of the same shape (any layout, any dtype).
  const src = Tensor.fromArray(arange(6), [3, 2], "float16").transpose(0, 1); // [2, 3]
  const dst = Tensor.zeros([2, 3]);
  assert.equal(dst.copy_(src), dst);
  assert.deepEqual(dst.toArray(), src.toArray());
  assert.throws(
    () => dst.copy_(Tensor.zeros([3, 2])),
    /copy_: source shape \[3, 2\] differs from \[2, 3\]/,
  );
  assert.throws(
    () => dst.copy_([1, 2, 3]),
    /copy_: 3 values do not fill shape \[2, 3\] \(6 elements\)/,
  );
  // Overlapping self-copy through a view reads before writing.
  const z = Tensor.fromArray(arange(4), [2, 2]);
  z.copy_(z.transpose(0, 1));
  assert.deepEqual(z.toArray(), [0, 2, 1, 3]);
});

Deno.test("toFloat64Array follows the view's logical row-major order", () => {
  const data = new Float32Array(arange(20));
  // A [2, 3] view at offset 2 with strides [7, 2].
  const v = Tensor.fromData(data, [2, 3], { strides: [7, 2], offset: 2 });
  assert.deepEqual(Array.from(v.toFloat64Array()), [2, 4, 6, 9, 11, 13]);
  // A stride of 0 (broadcast) repeats an element.
  const b = Tensor.fromData(data, [3, 2], { strides: [0, 1], offset: 5 });
  assert.deepEqual(b.toArray(), [5, 6, 5, 6, 5, 6]);
  const x = Tensor.fromArray(arange(6), [2, 3], "bfloat16");
  assert.deepEqual(Array.from(x.permute([1, 0]).toFloat64Array()), [0, 3, 1, 4, 2, 5]);
});

// ---------------------------------------------------------------------------------------
// Errors

Deno.test("bad shapes, strides, offsets and storage give clear errors", () => {
  assert.throws(() => Tensor.zeros([2, -1]), /Tensor.zeros: dimension -1 is not an integer >= 0/);
  assert.throws(() => Tensor.zeros([2.5]), /dimension 2.5 is not an integer >= 0/);
  assert.throws(() => Tensor.zeros([NaN]), /dimension NaN/);
  assert.throws(
    () => Tensor.zeros(new Array(65).fill(1)),
    /Tensor.zeros: rank 65 exceeds the maximum of 64/,
  );
  assert.throws(
    () => Tensor.fromArray([1, 2, 3], [2, 2]),
    /Tensor.fromArray: 3 values do not fill shape \[2, 2\] \(4 elements\)/,
  );
  assert.throws(() => Tensor.full([-3], 1), /Tensor.full/);
  assert.throws(() => Tensor.random([1, -1]), /Tensor.random/);
  const data = new Float32Array(6);
  assert.throws(
    () => new Tensor(data, "float32", [2, 3], [3]),
    /strides \[3\] must be 2 integers >= 0/,
  );
  assert.throws(() => new Tensor(data, "float32", [2, 3], [-3, 1]), RangeError);
  assert.throws(() => new Tensor(data, "float32", [2, 3], [3, 1], -1), /offset -1/);
  assert.throws(
    () => new Tensor(data, "float32", [2, 3], [3, 1], 1),
    /needs 7 elements but the storage holds 6/,
  );
  assert.throws(() => new Tensor(data, "float32", [7]), /needs 7 elements/);
  assert.throws(
    () => new Tensor(data, "float16", [6]),
    /storage Float32Array cannot hold dtype float16/,
  );
  assert.throws(
    () => new Tensor(data, "float64" as unknown as "float32", [6]),
    (e: unknown) =>
      e instanceof TypeError &&
      e.message ===
        'Tensor: unknown dtype "float64"; the dtypes are "float32", "float16", "bfloat16", "int32"',
  );
  // An options object where a factory takes the dtype itself: the message says so.
  assert.throws(
    () => Tensor.zeros([2], { dtype: "int32" } as unknown as "int32"),
    (e: unknown) =>
      e instanceof TypeError &&
      e.message.startsWith(
        'Tensor: unknown dtype {"dtype":"int32"} (pass the dtype itself, "int32", not an object',
      ),
  );
  assert.throws(
    () => Tensor.random([2], { dtype: "int8" as "int32" }),
    /unknown dtype "int8"; the dtypes are/,
  );
  const x = Tensor.zeros([2, 3]);
  assert.throws(() => x.permute([0]), /permute: \[0\] is not a permutation of 0..1/);
  assert.throws(() => x.permute([0, 0]), /not a permutation/);
  assert.throws(() => x.permute([0, 2]), /not a permutation/);
  assert.throws(() => x.transpose(0, 2), /transpose: dims 0, 2 out of range for rank 2/);
  assert.throws(() => x.item(), /item: tensor has 6 elements/);
});
