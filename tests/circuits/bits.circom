pragma circom 2.0.0;

// Bit decomposition (boolean constraints, long linear combinations): splits a 64-bit input
// into bits, outputs the number of set bits and the value with its bits reversed.
// Public inputs: v, k; public outputs: popcount, reversed, vk.
template Bits(n) {
    signal input v;
    signal input k;
    signal input w;
    signal output popcount;
    signal output reversed;
    signal output vk;
    signal b[n];
    var acc = 0;
    var cnt = 0;
    var rev = 0;
    var e = 1;
    for (var i = 0; i < n; i++) {
        b[i] <-- (v >> i) & 1;
        b[i] * (b[i] - 1) === 0;
    }
    for (var i = 0; i < n; i++) {
        acc += b[i] * e;
        rev += b[n - 1 - i] * e;
        cnt += b[i];
        e = e + e;
    }
    acc === v;
    popcount <== cnt;
    reversed <== rev;
    signal t;
    t <== v * k;
    vk <== t * w;
}

component main {public [v, k]} = Bits(64);
