pragma circom 2.0.0;

// Nested array inputs, several public inputs and outputs, and an assert (witness tests).
// m is an R x C matrix and v a C-vector (both public); s is a private scale that must be below
// `limit` (public), an assert the witness calculator checks. Outputs: mv = m·v (R values),
// scaled = s·mv[0], total = the sum of m's entries.
template Nested(R, C) {
    signal input m[R][C];
    signal input v[C];
    signal input s;
    signal input limit;
    signal output mv[R];
    signal output scaled;
    signal output total;
    signal prod[R][C];
    var acc;
    var sum = 0;
    assert(s < limit);
    for (var i = 0; i < R; i++) {
        acc = 0;
        for (var j = 0; j < C; j++) {
            prod[i][j] <== m[i][j] * v[j];
            acc += prod[i][j];
            sum += m[i][j];
        }
        mv[i] <== acc;
    }
    scaled <== s * mv[0];
    total <== sum;
}

component main {public [m, v, limit]} = Nested(2, 3);
