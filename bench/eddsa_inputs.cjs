// Inputs of tests/circuits/eddsa.circom: n valid EdDSA-Poseidon signatures made by circomlibjs.
// Usage: node bench/eddsa_inputs.cjs NODE_MODULES N SEED > input.json
// Signer i's private key is SHA-256("cuzk eddsa key <seed> <i>"), its message the field element
// SHA-256("cuzk eddsa message <seed> <i>") mod r: the same seed gives the same file. Every
// signature is checked with circomlibjs's verifyPoseidon before it is written.
"use strict";
const path = require("path");
const crypto = require("crypto");

async function main() {
    const [modules, nArg, seed] = process.argv.slice(2);
    const n = Number(nArg);
    if (!modules || !Number.isInteger(n) || n < 1 || seed === undefined) {
        console.error("usage: node eddsa_inputs.cjs NODE_MODULES N SEED");
        process.exit(2);
    }
    const { buildEddsa } = require(path.resolve(modules, "circomlibjs"));
    const eddsa = await buildEddsa();
    const F = eddsa.babyJub.F;
    const sha = (s) => crypto.createHash("sha256").update(s).digest();
    const out = { Ax: [], Ay: [], R8x: [], R8y: [], S: [], M: [] };
    for (let i = 0; i < n; i++) {
        const prv = sha(`cuzk eddsa key ${seed} ${i}`);
        const pub = eddsa.prv2pub(prv);
        const msg = F.e(BigInt("0x" + sha(`cuzk eddsa message ${seed} ${i}`).toString("hex")));
        const sig = eddsa.signPoseidon(prv, msg);
        if (!eddsa.verifyPoseidon(msg, sig, pub)) {
            throw new Error(`signature ${i} does not verify`);
        }
        out.Ax.push(F.toObject(pub[0]).toString());
        out.Ay.push(F.toObject(pub[1]).toString());
        out.R8x.push(F.toObject(sig.R8[0]).toString());
        out.R8y.push(F.toObject(sig.R8[1]).toString());
        out.S.push(sig.S.toString());
        out.M.push(F.toObject(msg).toString());
    }
    process.stdout.write(JSON.stringify(out) + "\n");
}

main().then(
    () => process.exit(0),
    (err) => {
        console.error(err.message || String(err));
        process.exit(1);
    }
);
