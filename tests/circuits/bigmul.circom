pragma circom 2.0.0;

// A chain of modular products of k-limb big integers in base 2^n (limbs range-checked by
// circomlib's Num2Bits, compiled with `-l .tools/node_modules`), as RSA and ECDSA circuits
// do: x[0] = a, x[t + 1] = x[t]·a mod p, every product proved as x[t]·a = q[t]·p + x[t + 1]
// with the quotient q[t] and remainder x[t + 1] given as witness limbs; output x[products]
// (public), so that a^(products + 1) mod p can be checked outside. a and p are public: the
// verifier sees that their limbs are below 2^n. A remainder is not compared with p (an RSA
// check does that once, on its last product). Witness values: dense limb products and carries
// beside the limbs' bits.
include "circomlib/circuits/bitify.circom";

// The 2k − 1 coefficients of the product of two k-limb polynomials, given as hints and
// checked at the 2k − 1 points x = 0 .. 2k − 2 (a degree-(2k − 2) polynomial is fixed by
// them): one constraint a point, as zk-email's and circom-ecdsa's BigMultNoCarry do. The
// coefficients are below k·2^(2n) < r, so the field's identity is the integers'.
template LimbPolyProduct(k) {
    signal input a[k];
    signal input b[k];
    signal output out[2 * k - 1];
    for (var i = 0; i < 2 * k - 1; i++) {
        var c = 0;
        for (var j = 0; j < k; j++) {
            if (i - j >= 0 && i - j < k) {
                c += a[j] * b[i - j];
            }
        }
        out[i] <-- c;
    }
    for (var x = 0; x < 2 * k - 1; x++) {
        var ax = 0;
        var bx = 0;
        var outx = 0;
        var xj = 1;
        for (var j = 0; j < 2 * k - 1; j++) {
            if (j < k) {
                ax += a[j] * xj;
                bx += b[j] * xj;
            }
            outx += out[j] * xj;
            xj *= x;
        }
        ax * bx === outx;
    }
}

// d(2^n) = 0 over the integers for the signed coefficients d[0 .. 2k − 2] of a·b − q·p − r,
// each below k·2^(2n+1) in size: coefficients are taken two at a time (base 2^(2n), sums
// below 2^(3n + log2 k + 2) < r/2) and the carries between the pairs range-checked in
// Num2Bits(n + log2 k + 4) after an offset: k − 1 carries instead of the 2k − 2 of one limb
// at a time, so one 2048-bit product fits a 2^13 domain.
template CarryToZero(n, k) {
    signal input d[2 * k - 1];
    var pairs = k;
    var cbits = n + 4;
    var kk = k;
    while (kk > 1) {
        cbits++;
        kk = (kk + 1) \ 2;
    }
    signal carry[pairs - 1];
    component carryBits[pairs - 1];
    for (var j = 0; j < pairs; j++) {
        var e = d[2 * j];
        if (2 * j + 1 < 2 * k - 1) {
            e += d[2 * j + 1] * (2 ** n);
        }
        if (j > 0) {
            e += carry[j - 1];
        }
        if (j < pairs - 1) {
            carry[j] <-- e / (2 ** (2 * n));  // exact: the field's division is the integers'
            e === carry[j] * (2 ** (2 * n));
            carryBits[j] = Num2Bits(cbits);
            carryBits[j].in <== carry[j] + 2 ** (cbits - 1);
        } else {
            e === 0;
        }
    }
}

// x·a = q·p + r with q and r given as k limbs of n bits (range-checked here); x, a and p
// are range-checked by whoever gives them.
template BigMulMod(n, k) {
    signal input x[k];
    signal input a[k];
    signal input p[k];
    signal input q[k];
    signal input r[k];
    component qBits[k];
    component rBits[k];
    for (var i = 0; i < k; i++) {
        qBits[i] = Num2Bits(n);
        qBits[i].in <== q[i];
        rBits[i] = Num2Bits(n);
        rBits[i].in <== r[i];
    }
    component xa = LimbPolyProduct(k);
    component qp = LimbPolyProduct(k);
    xa.a <== x;
    xa.b <== a;
    qp.a <== q;
    qp.b <== p;
    component zero = CarryToZero(n, k);
    for (var i = 0; i < 2 * k - 1; i++) {
        if (i < k) {
            zero.d[i] <== xa.out[i] - qp.out[i] - r[i];
        } else {
            zero.d[i] <== xa.out[i] - qp.out[i];
        }
    }
}

template BigMulModChain(products, n, k) {
    signal input a[k];
    signal input p[k];
    signal input q[products][k];
    signal input r[products][k];
    signal output out[k];
    component mul[products];
    for (var t = 0; t < products; t++) {
        mul[t] = BigMulMod(n, k);
        if (t == 0) {
            mul[t].x <== a;
        } else {
            mul[t].x <== r[t - 1];
        }
        mul[t].a <== a;
        mul[t].p <== p;
        mul[t].q <== q[t];
        mul[t].r <== r[t];
    }
    out <== r[products - 1];
}

component main {public [a, p]} = BigMulModChain(2, 64, 32);
