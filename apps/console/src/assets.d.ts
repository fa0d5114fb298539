/** Style sheets imported for their effect: esbuild bundles them into `main-<hash>.css`. */
declare module "*.css" {}
