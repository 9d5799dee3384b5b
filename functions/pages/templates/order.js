// The order form: counts what the customer types in UTF-16 units (what the
// checkout API counts, and JavaScript's string length), checks the form,
// posts it to /api/checkout as JSON and goes to the payment page it returns.
(() => {
  'use strict';
  const form = document.getElementById('order');
  const query = document.getElementById('query');
  const referral = document.getElementById('referral');
  const counter = document.getElementById('counter');
  const message = document.getElementById('form-message');
  const submit = document.getElementById('submit');
  const max = Number(form.dataset.max);
  const number = new Intl.NumberFormat('en-CA');
  const referralPattern = /^[A-Za-z0-9_-]{1,64}$/;
  // What the checkout API counts as an empty query (oracle.Blank): white
  // space, format and control characters, lone combining marks and the
  // fillers that render as blanks.
  const blankPattern = /^[\s\p{Z}\p{Cf}\p{Cc}\p{Mn}\p{Me}\u115F\u1160\u3164\uFFA0\u2800]*$/u;
  // The draft survives a trip to the payment page and back (cancel or the
  // back button) in this tab only; the result page forgets it.
  const draftKey = 'oracle-draft';

  const plural = (n, one, many) => number.format(n) + (n === 1 ? one : many);

  function count() {
    const left = max - query.value.length;
    counter.textContent = left >= 0
      ? plural(left, ' character left', ' characters left')
      : plural(-left, ' character over the limit', ' characters over the limit');
    counter.classList.toggle('over', left < 0);
    return left;
  }

  function say(text, field) {
    message.classList.remove('progress');
    message.textContent = text;
    for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
    if (field) {
      field.setAttribute('aria-invalid', 'true');
      field.focus();
    }
  }

  function busy(on) {
    submit.disabled = on;
    form.setAttribute('aria-busy', String(on));
    submit.textContent = on ? 'Taking you to payment…' : 'Continue to payment';
  }

  // The API's messages are short clauses ("query is empty: …"); shown as
  // sentences they read as the rest of the page does.
  function sentence(s) {
    s = s.trim();
    s = s.charAt(0).toUpperCase() + s.slice(1);
    return /[.!?]$/.test(s) ? s : s + '.';
  }

  function payURL(u) {
    try {
      const url = new URL(u, location.href);
      return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : '';
    } catch {
      return '';
    }
  }

  function restore() {
    let draft;
    try {
      draft = JSON.parse(sessionStorage.getItem(draftKey) || 'null');
    } catch {
      return;
    }
    if (!draft) return;
    const radio = form.querySelector('input[name="tier"][value="' + CSS.escape(String(draft.tier)) + '"]');
    if (radio) radio.checked = true;
    if (typeof draft.query === 'string') query.value = draft.query;
    if (typeof draft.referral_code === 'string') referral.value = draft.referral_code;
  }

  async function send(body) {
    let res;
    try {
      res = await fetch('/api/checkout', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify(body),
        credentials: 'same-origin',
        cache: 'no-store',
      });
    } catch {
      busy(false);
      say('We could not reach the payment service. Check your connection and try again.');
      return;
    }
    let reply = null;
    try {
      reply = await res.json();
    } catch {
      // Not JSON: a gateway or network error page. Handled below.
    }
    const url = res.ok && reply ? payURL(reply.url) : '';
    if (url) {
      try {
        sessionStorage.setItem(draftKey, JSON.stringify(body));
      } catch {
        // Storage full or disabled: the draft is a convenience only.
      }
      location.assign(url);
      return;
    }
    busy(false);
    if (reply && typeof reply.error === 'string' && reply.error.trim()) {
      say(sentence(reply.error));
    } else if (res.status === 429) {
      say('Many people are ordering right now. Please wait a moment and try again.');
    } else {
      say('Something went wrong on our side. Please try again in a moment.');
    }
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (submit.disabled) return;
    const tier = form.elements.tier.value;
    const code = referral.value.trim();
    const left = count();
    if (!tier) return say('Choose a tier.', form.querySelector('input[name="tier"]'));
    if (blankPattern.test(query.value)) return say('Describe your idea or question.', query);
    if (left < 0) return say('Your question is too long: shorten it by ' + plural(-left, ' character.', ' characters.'), query);
    if (code && !referralPattern.test(code)) {
      return say('A referral code has at most 64 letters, digits, dashes and underscores.', referral);
    }
    say('');
    message.classList.add('progress');
    message.textContent = 'Taking you to secure payment…';
    busy(true);
    const body = { tier, query: query.value };
    if (code) body.referral_code = code;
    send(body);
  });

  query.addEventListener('input', count);
  // Coming back with the back button may restore this page as it was left,
  // button disabled; make it usable again.
  window.addEventListener('pageshow', (event) => {
    if (event.persisted) {
      busy(false);
      say('');
    }
  });
  restore();
  count();
})();
