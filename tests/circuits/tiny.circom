pragma circom 2.0.0;

// The smallest useful circuit: one public input, one private input, one public output,
// one constraint (c = a * b).
template Tiny() {
    signal input a;
    signal input b;
    signal output c;
    c <== a * b;
}

component main {public [a]} = Tiny();
