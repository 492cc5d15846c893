// esbuild loads .css files as text (scripts/build.mjs): the page injects them into one <style>.
declare module "*.css" {
  const text: string;
  export default text;
}
