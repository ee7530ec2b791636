// The labs of the workbench, in the order the home page lists them. A lab whose engine has not
// landed yet has `page: null` and shows as coming.
export const LABS = [
  {
    id: 'pipeline',
    number: '04',
    title: 'Pipeline schedules',
    page: 'pipeline.html',
    teaches:
      'Track microbatches through pipeline stages: where the bubbles are, what each schedule ' +
      '(GPipe, 1F1B, interleaved, zero bubble, DualPipeV) costs in time and in activation memory, and why.',
  },
  {
    id: 'topology',
    number: '08',
    title: 'Topology and communication',
    page: 'topology.html',
    teaches:
      'Which collective crosses which link: place a job\'s ranks on a cluster, see each parallel axis ' +
      'on NVLink, a network rail or the spine, what a training step sends, and price one collective ' +
      '(ring against tree, bandwidth against latency).',
  },
  {
    id: 'design',
    number: '12',
    title: 'Parallelism design',
    page: 'design.html',
    teaches:
      'Combine data, tensor, pipeline and expert parallelism for one model on one cluster: every ' +
      'layout ranked, memory per GPU, where the step time goes, and why the winner won.',
  },
  {
    id: 'scenarios',
    number: '09',
    title: 'Interview scenarios',
    page: 'scenarios.html',
    teaches:
      'Worked scenarios (a job runs out of memory, TP crosses nodes, too few microbatches, an MoE ' +
      'all-to-all) or your own design, answered in five parts: problem, mechanism, communication, ' +
      'tradeoff and measurement, each with the engine\'s numbers.',
  },
  {
    id: 'measurement',
    number: null,
    title: 'Measurement',
    page: 'measure.html',
    teaches:
      'Read real traces: upload profiler output (or generate a pipeline\'s), see where each rank\'s GPU ' +
      'time went, the bubble as measured, and the communication that was not hidden behind compute.',
  },
];
