pragma circom 2.0.0;

// A MiMC-style toy hash (not Poseidon, not for real use): x <- (x + k + c_i)^5 for n rounds,
// 3 constraints per round. With n = 300 it has about 900 constraints (domain 2^10).
// Public inputs: k; public outputs: h, h2.
template ToyHash(n) {
    signal input x;
    signal input k;
    signal output h;
    signal output h2;
    signal s[n + 1];
    signal t2[n];
    signal t4[n];
    s[0] <== x;
    var c = 7;
    for (var i = 0; i < n; i++) {
        t2[i] <== (s[i] + k + c) * (s[i] + k + c);
        t4[i] <== t2[i] * t2[i];
        s[i + 1] <== t4[i] * (s[i] + k + c);
        c = c * c + 13;
    }
    h <== s[n] + k;
    h2 <== s[n / 2] * 2 + 1;
}

component main {public [k]} = ToyHash(300);
