// The home page: what each lab teaches, and which are still to come.
import { el, renderNav } from './common.js';
import { LABS } from './labs.js';

renderNav('home');
const list = document.getElementById('labs');
for (const lab of LABS) {
  const heading = lab.number ? `Lab ${lab.number} · ${lab.title}` : lab.title;
  list.append(
    el(
      'li',
      { class: lab.page ? 'lab' : 'lab lab-coming', 'data-lab': lab.id },
      el('h2', {}, lab.page ? el('a', { href: lab.page }, heading) : heading),
      el('p', {}, lab.teaches),
      lab.page
        ? el('p', { class: 'status' }, el('a', { href: lab.page, class: 'button' }, 'Open the lab'))
        : el('p', { class: 'status coming' }, 'Coming: its engine is being built.'),
    ),
  );
}
