pragma circom 2.0.0;

// A chain of n multiplications: out = x * y^1 * y^2 * ... with a running product, plus a
// second output sum = x + y. Public inputs: x; public outputs: out, sum.
template MulChain(n) {
    signal input x;
    signal input y;
    signal output out;
    signal output sum;
    signal p[n + 1];
    signal yy[n + 1];
    p[0] <== x;
    yy[0] <== y;
    for (var i = 0; i < n; i++) {
        yy[i + 1] <== yy[i] * y;
        p[i + 1] <== p[i] * (yy[i] + 3);
    }
    out <== p[n];
    sum <== x + y;
}

component main {public [x]} = MulChain(8);
