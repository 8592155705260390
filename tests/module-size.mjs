// deploy-check's bound on the deployable module: gzipped at level 9, as `make bench`
// measures it, it may not pass `node tests/module-size.mjs <KiB>`.
import { moduleSize } from "../bench/size.mjs";

const bound = Number(process.argv[2]);
const kib = moduleSize("build/index_bg.wasm").gzip / 1024;
console.log(`deploy-check: the module is ${kib.toFixed(1)} KiB gzipped (bound ${bound} KiB)`);
if (!(kib <= bound)) {
  console.error("deploy-check: the module grew past its bound; make it smaller, or raise WASM_GZIP_KIB in the Makefile saying why");
  process.exit(1);
}
