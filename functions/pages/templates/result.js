// The result page: polls /api/verdict for this session, waiting longer each
// time up to a cap, and shows the state the API reports. Everything the API
// sends is inserted with textContent, so a submission or a reply containing
// markup is shown as the text it is.
(() => {
  'use strict';
  const main = document.getElementById('main');
  const first = Number(main.dataset.pollFirst);
  const cap = Number(main.dataset.pollCap);
  const limit = Number(main.dataset.pollLimit);
  const verdicts = ['GREEN', 'AMBER', 'RED', 'NULL'];
  const sessionPattern = /^cs_(test|live)_[A-Za-z0-9]{1,250}$/;
  // The page is at /result/{session_id}, or at /oracle/result?session_id=….
  const atPath = location.pathname.match(/^\/result\/([^/]*)$/);
  const id = (atPath ? atPath[1] : new URLSearchParams(location.search).get('session_id')) || '';
  let delay = first;
  let started = Date.now();

  const $ = (sel, root = document) => root.querySelector(sel);

  try {
    sessionStorage.removeItem('oracle-draft');
  } catch {
    // Storage disabled: there is no draft to forget.
  }

  function show(name, text) {
    for (const section of document.querySelectorAll('section.state')) {
      section.hidden = section.dataset.state !== name;
    }
    const section = $('section.state[data-state="' + name + '"]');
    const msg = $('.message', section);
    if (msg && typeof text === 'string' && text.trim()) msg.textContent = text;
    main.dataset.state = name;
    $('#announce').textContent = $('h2', section).textContent;
  }

  function setText(sel, value, root) {
    const el = $(sel, root);
    el.textContent = typeof value === 'string' ? value : '';
    return el;
  }

  // A dot and its word. An unknown token keeps the neutral dot; the word
  // is shown either way, so the customer sees what the verdict says.
  function setVerdict(root, token) {
    const word = typeof token === 'string' ? token : '';
    const dot = $('.dot', root);
    dot.className = 'dot';
    if (verdicts.includes(word)) dot.classList.add('dot-' + word.toLowerCase());
    setText('.word', word, root);
  }

  function ready(body) {
    const v = body.verdict || {};
    // The email with the verdict is known not to have reached the
    // customer: this page is where the verdict is, and it says so.
    $('#email-undelivered').hidden = body.email !== 'undelivered';
    setText('#tier-name', body.tier_name);
    setVerdict($('#verdict'), v.verdict);
    for (const p of document.querySelectorAll('[data-meaning]')) p.hidden = p.dataset.meaning !== v.verdict;
    setText('#summary', v.summary);

    // Every regenerated verdict says so, when and why; a change of colour
    // says what was delivered before. One that moved far from the emailed
    // one carries the disclaimer instead, naming the emailed verdict,
    // which stands.
    const notice = body.divergence_notice === true;
    const regen = body.regen === true;
    $('#regenerated').hidden = !regen;
    const again = new Date(body.regenerated_at);
    $('#regenerated-when').hidden = !regen || isNaN(again);
    if (regen && !isNaN(again)) {
      const time = setText('#regenerated-at', again.toLocaleDateString('en-CA', { year: 'numeric', month: 'long', day: 'numeric' }));
      time.dateTime = again.toISOString();
    }
    for (const s of document.querySelectorAll('[data-regen-reason]')) s.hidden = !regen || s.dataset.regenReason !== body.regen_reason;
    const before = regen && !notice && verdicts.includes(body.original_verdict) && body.original_verdict !== v.verdict;
    $('#before').hidden = !before;
    if (before) setVerdict($('#before-verdict'), body.original_verdict);
    $('#divergence').hidden = !notice;
    const original = notice && verdicts.includes(body.original_verdict);
    $('#original').hidden = !original;
    if (original) setVerdict($('#original-verdict'), body.original_verdict);
    setText('#query', body.query);

    // Which blocks show follows the tier, as in the email.
    const deep = body.tier === 'full' || body.tier === 'strategy';
    const breakdown = deep && v.breakdown && typeof v.breakdown === 'object' ? v.breakdown : null;
    $('#breakdown').hidden = !breakdown;
    for (const li of document.querySelectorAll('[data-dimension]')) {
      const note = breakdown && breakdown[li.dataset.dimension];
      li.hidden = !note;
      if (!note) continue;
      setVerdict(li, note.verdict);
      setText('.analysis', note.analysis, li);
    }

    const s = body.tier === 'strategy' ? v.strategy : null;
    $('#strategy').hidden = !s;
    if (s) {
      setText('#next-step', s.next_step);
      setText('#alternative', s.alternative);
      const tests = $('#tests');
      tests.replaceChildren();
      for (const t of Array.isArray(s.tests) ? s.tests : []) {
        const li = document.createElement('li');
        li.textContent = typeof t === 'string' ? t : '';
        tests.append(li);
      }
    }

    const days = Number(body.retention_days);
    $('#retention').hidden = !(days > 0);
    if (days > 0) setText('#retention-days', String(days));
    const at = new Date(body.cached_at);
    $('#prepared').hidden = isNaN(at);
    if (!isNaN(at)) {
      const time = setText('#prepared-at', at.toLocaleDateString('en-CA', { year: 'numeric', month: 'long', day: 'numeric' }));
      time.dateTime = at.toISOString();
    }
    show('ready');
  }

  // answer shows a final state and returns true, or returns false when the
  // page should ask again.
  function answer(status, body) {
    switch (body.status) {
      case 'ready':
        ready(body);
        return true;
      case 'under_review':
      case 'dropped':
      case 'refunded':
      case 'expired':
        show(body.status, body.message);
        return true;
      case 'failed':
        show('failed', body.error);
        return true;
      case 'pending':
        return false;
      case 'preparing_again':
        // A stored verdict that could not be read is generated again: the
        // page says so and keeps asking.
        show('preparing_again', body.message);
        return false;
    }
    if (status === 402) {
      show('unpaid');
      return true;
    }
    if (status === 400 || status === 404) {
      show('unknown');
      return true;
    }
    return false;
  }

  async function poll() {
    let trouble = false;
    try {
      const res = await fetch('/api/verdict?session_id=' + encodeURIComponent(id), {
        headers: { Accept: 'application/json' },
        credentials: 'same-origin',
        cache: 'no-store',
      });
      let body = {};
      try {
        body = (await res.json()) || {};
      } catch {
        // Not JSON: a gateway error. Asked again below.
      }
      if (answer(res.status, body)) return;
      trouble = res.status >= 500 || res.status === 429;
    } catch {
      trouble = true;
    }
    $('#trouble').hidden = !trouble;
    if (Date.now() - started + delay > limit) {
      show('timeout');
      return;
    }
    setTimeout(poll, delay);
    delay = Math.min(delay * 2, cap);
  }

  $('#retry').addEventListener('click', () => {
    delay = first;
    started = Date.now();
    $('#trouble').hidden = true;
    show('pending');
    poll();
  });

  if (main.dataset.state === 'unknown' || !sessionPattern.test(id)) {
    show('unknown');
    return;
  }
  poll();
})();
