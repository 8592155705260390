// deploy-check's bounds on the deployable modules: each Worker's, gzipped at level
// 9 as `make bench` measures it, may not pass its own bound:
// `node tests/module-size.mjs <edge KiB> <manage KiB> <objects KiB>`.
import { moduleSize } from "../bench/size.mjs";

const bounds = { edge: Number(process.argv[2]), manage: Number(process.argv[3]), objects: Number(process.argv[4]) };
let grew = false;
for (const [half, bound] of Object.entries(bounds)) {
  const kib = moduleSize(`build/${half}/index_bg.wasm`).gzip / 1024;
  const whose = { edge: "edge's", manage: "management Worker's", objects: "objects'" }[half];
  console.log(`deploy-check: the ${whose} module is ${kib.toFixed(1)} KiB gzipped (bound ${bound} KiB)`);
  if (!(kib <= bound)) {
    console.error(`deploy-check: the ${whose} module grew past its bound; make it smaller, or raise its bound in the Makefile saying why`);
    grew = true;
  }
}
if (grew) process.exit(1);
