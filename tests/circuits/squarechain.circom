pragma circom 2.0.0;

// A squaring chain: x[i] = x[i-1]^2 + b for n steps, one constraint per step. Its witness
// values are dense 254-bit field elements after a few steps, as in most real circuits (hashes,
// signatures), unlike circuits whose witness is mostly bits. Public input: b; output: y.
template SquareChain(n) {
    signal input x;
    signal input b;
    signal output y;
    signal s[n + 1];
    s[0] <== x;
    for (var i = 0; i < n; i++) {
        s[i + 1] <== s[i] * s[i] + b;
    }
    y <== s[n];
}

component main {public [b]} = SquareChain(1000);
