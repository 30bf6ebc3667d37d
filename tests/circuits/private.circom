pragma circom 2.0.0;

// No public signal at all (no output, no public input): a PLONK key with nPublic = 0, whose
// Lagrange section still holds L_1 (tests/test_plonk_prove.py).
template Private() {
    signal input a;
    signal input b;
    signal c;
    c <== a * b + a;
}

component main = Private();
