// pdf.js's worker module, bundled into the PDF preview page and run on its thread (decision 763).
declare module 'pdfjs-dist/build/pdf.worker.mjs' {
  export const WorkerMessageHandler: unknown;
}
