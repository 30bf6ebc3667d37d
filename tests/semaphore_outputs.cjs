// The public outputs of tests/circuits/semaphore.circom for an input file, computed by
// circomlibjs (the reference the circuit's proofs are checked against).
// Usage: node tests/semaphore_outputs.cjs NODE_MODULES INPUT_JSON > outputs.json
// Proof i: public key secret[i]·Base8 on BabyJubjub, commitment Poseidon(Ax, Ay), then
// depth[i] levels of Poseidon(left, right) with bit j of index[i] putting the node on the
// right; output {"merkleRoot": [...], "nullifier": [Poseidon(scope[i], secret[i]), ...]}.
"use strict";
const fs = require("fs");
const path = require("path");

async function main() {
    const [modules, inputFile] = process.argv.slice(2);
    if (!modules || !inputFile) {
        console.error("usage: node semaphore_outputs.cjs NODE_MODULES INPUT_JSON");
        process.exit(2);
    }
    const { buildBabyjub, buildPoseidon } = require(path.resolve(modules, "circomlibjs"));
    const babyJub = await buildBabyjub();
    const poseidon = await buildPoseidon();
    const F = poseidon.F;
    const hash = (a, b) => F.toObject(poseidon([a, b]));
    const input = JSON.parse(fs.readFileSync(inputFile, "utf8"));
    const out = { merkleRoot: [], nullifier: [] };
    for (let i = 0; i < input.secret.length; i++) {
        const secret = BigInt(input.secret[i]);
        const pub = babyJub.mulPointEscalar(babyJub.Base8, secret);
        let node = hash(babyJub.F.toObject(pub[0]), babyJub.F.toObject(pub[1]));
        const index = BigInt(input.index[i]);
        for (let j = 0; j < Number(input.depth[i]); j++) {
            const sibling = BigInt(input.siblings[i][j]);
            node = (index >> BigInt(j)) & 1n ? hash(sibling, node) : hash(node, sibling);
        }
        out.merkleRoot.push(node.toString());
        out.nullifier.push(hash(BigInt(input.scope[i]), secret).toString());
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
