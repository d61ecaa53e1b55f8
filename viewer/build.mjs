// Bundles the e-graph viewer and copies the offline API-docs assets into the Python package
// (legalsat/server/static), which ships them: the service loads nothing from a CDN.
// Rebuild after changing src/ or package.json: `npm ci && npm run build` (in viewer/).
import { build } from "esbuild";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";

const out = new URL("../legalsat/server/static/", import.meta.url).pathname;
mkdirSync(`${out}viewer`, { recursive: true });
mkdirSync(`${out}docs`, { recursive: true });

await build({
  entryPoints: ["src/viewer.js"],
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2020",
  legalComments: "external",
  outfile: `${out}viewer/viewer.js`,
  logLevel: "warning",
});
copyFileSync("src/viewer.css", `${out}viewer/viewer.css`);

const copies = {
  "node_modules/swagger-ui-dist/swagger-ui-bundle.js": "docs/swagger-ui-bundle.js",
  "node_modules/swagger-ui-dist/swagger-ui.css": "docs/swagger-ui.css",
  "node_modules/swagger-ui-dist/favicon-32x32.png": "docs/favicon-32x32.png",
  "node_modules/swagger-ui-dist/LICENSE": "docs/swagger-ui.LICENSE.txt",
  "node_modules/redoc/bundles/redoc.standalone.js": "docs/redoc.standalone.js",
  "node_modules/redoc/LICENSE": "docs/redoc.LICENSE.txt",
  "src/swagger-init.js": "docs/swagger-init.js",
};
for (const [from, to] of Object.entries(copies)) copyFileSync(from, `${out}${to}`);

// ReDoc's footer shows a logo from cdn.redoc.ly: an image that does not load hides itself, so
// `data:,` keeps the page off the network
const redoc = `${out}docs/redoc.standalone.js`;
const cdnLogo = '"https://cdn.redoc.ly/redoc/logo-mini.svg"';
const text = readFileSync(redoc, "utf8");
if (!text.includes(cdnLogo)) throw new Error(`redoc.standalone.js no longer has ${cdnLogo}: check its network use`);
writeFileSync(redoc, text.replace(cdnLogo, '"data:,"'));
