// Sisters Chat: asks GET /api/chat who is signed in, shows the sign-in
// form or the conversation (and whose it is), and sends each message to
// POST /api/chat; Enter sends.
// Text is only ever inserted as text; every request is same-origin JSON.
(() => {
  'use strict';
  const main = document.getElementById('main');
  const $ = (id) => document.getElementById(id);
  const trial = Number(main.dataset.trial);
  const max = Number(main.dataset.max);
  const near = Number(main.dataset.near);
  const number = new Intl.NumberFormat('en-CA');
  const dateFormat = new Intl.DateTimeFormat('en-CA', { dateStyle: 'long' });
  // What the API counts as an empty message (oracle.Blank).
  const blankPattern = /^[\s\p{Z}\p{Cf}\p{Cc}\p{Mn}\p{Me}\u115F\u1160\u3164\uFFA0\u2800]*$/u;
  const plural = (n, one, many) => number.format(n) + (n === 1 ? one : many);
  const message = $('message');
  let state = null;

  function show(id) {
    for (const s of ['loading', 'signin', 'sent', 'chat']) $(s).hidden = s !== id;
    $('erased').hidden = true;
    closeErase();
  }

  function closeErase() {
    $('erase-confirm').hidden = true;
    say($('erase-message'), '');
  }

  function sentence(s) {
    s = String(s || '').trim();
    if (!s) return 'Something went wrong. Please try again.';
    s = s.charAt(0).toUpperCase() + s.slice(1);
    return /[.!?)]$/.test(s) ? s : s + '.';
  }

  async function call(method, path, body) {
    const init = { method, credentials: 'same-origin', headers: {} };
    if (method !== 'GET') {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body || {});
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch {
      return { status: 0, data: { error: 'the connection failed: check your network and try again' } };
    }
    let data = {};
    try {
      data = await resp.json();
    } catch {
      data = {};
    }
    return { status: resp.status, data };
  }

  function say(el, text, progress) {
    el.textContent = text;
    el.classList.toggle('progress', Boolean(progress));
  }

  function turn(role, text) {
    const li = document.createElement('li');
    li.className = 'turn turn-' + (role === 'user' ? 'user' : 'aether');
    const who = document.createElement('span');
    who.className = 'turn-who';
    who.textContent = role === 'user' ? 'You' : 'The Oracle';
    li.append(who, document.createTextNode(text));
    $('conversation').append(li);
    $('empty').hidden = true;
    return li;
  }

  function count() {
    const left = max - [...message.value].length;
    const counter = $('counter');
    counter.textContent = left >= 0
      ? plural(left, ' character left', ' characters left')
      : plural(-left, ' character over the limit', ' characters over the limit');
    counter.classList.toggle('over', left < 0);
    return left;
  }

  // What is left: free exchanges, or today's under a subscriber's cap
  // (said only when few remain), and the offer once nothing is.
  function status() {
    const left = $('left');
    const sub = state.subscription;
    let text = '';
    let low = false;
    if (sub && sub.active) {
      text = 'Your subscription is active.';
      if (sub.cancel_at_period_end && sub.current_period_end) {
        text = 'Your subscription is cancelled; you keep access until ' + dateFormat.format(new Date(sub.current_period_end)) + '.';
      }
      if (sub.left_today <= near) {
        low = true;
        text += ' ' + plural(sub.left_today, ' exchange left today.', ' exchanges left today.');
      }
    } else if (state.exchanges_left > 0) {
      low = state.exchanges_left <= near;
      text = plural(state.exchanges_left, ' free exchange left', ' free exchanges left') + ' of ' + number.format(trial) + '.';
      if (state.exchanges_left > trial) text = plural(state.exchanges_left, ' free exchange left.', ' free exchanges left.');
    } else if (sub && sub.status) {
      text = 'Your subscription has ended. Subscribe again to keep talking.';
    }
    left.textContent = text;
    left.classList.toggle('near', low);
    const offer = !(sub && sub.active) && state.exchanges_left <= 0;
    $('offer').hidden = !offer;
    $('message-form').hidden = offer;
    $('portal').hidden = !(sub && sub.manage);
  }

  async function load() {
    const { status: code, data } = await call('GET', '/api/chat');
    if (code === 401) {
      show('signin');
      return;
    }
    if (code !== 200) {
      show('signin');
      say($('signin-message'), sentence(data.error));
      return;
    }
    state = data;
    $('address').textContent = String(data.address || '');
    $('conversation').replaceChildren();
    for (const m of data.messages) turn(m.role, m.text);
    $('empty').hidden = data.messages.length > 0;
    show('chat');
    status();
    count();
  }

  $('signin-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const email = $('email');
    const out = $('signin-message');
    if (!email.value.trim() || !email.value.includes('@')) {
      email.setAttribute('aria-invalid', 'true');
      email.focus();
      say(out, 'Please enter your email address.');
      return;
    }
    email.removeAttribute('aria-invalid');
    $('signin-submit').disabled = true;
    say(out, 'Sending…', true);
    const { status: code, data } = await call('POST', '/api/chat/signin', { email: email.value.trim() });
    $('signin-submit').disabled = false;
    if (code === 202) {
      say(out, '');
      show('sent');
      $('sent-heading').focus();
      return;
    }
    if (code === 400) email.setAttribute('aria-invalid', 'true');
    say(out, sentence(data.error));
  });

  message.addEventListener('input', count);

  // Enter sends, as in any chat; Shift and Enter start a new line. While an
  // input method composes a word, its Enter ends the composition and sends
  // nothing.
  message.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.shiftKey || e.isComposing || e.keyCode === 229) return;
    e.preventDefault();
    if (!$('send').disabled) $('message-form').requestSubmit();
  });

  $('message-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const out = $('chat-message');
    const text = message.value;
    if (blankPattern.test(text)) {
      message.setAttribute('aria-invalid', 'true');
      message.focus();
      say(out, 'Please write a message first.');
      return;
    }
    if (count() < 0) {
      message.setAttribute('aria-invalid', 'true');
      message.focus();
      say(out, 'Your message is too long: at most ' + number.format(max) + ' characters.');
      return;
    }
    message.removeAttribute('aria-invalid');
    const mine = turn('user', text);
    message.value = '';
    count();
    $('send').disabled = true;
    $('message-form').setAttribute('aria-busy', 'true');
    say(out, 'The Oracle is answering…', true);
    const { status: code, data } = await call('POST', '/api/chat', { message: text });
    $('send').disabled = false;
    $('message-form').setAttribute('aria-busy', 'false');
    if (code === 200) {
      say(out, '');
      turn('aether', data.reply);
      if ('exchanges_left' in data) state.exchanges_left = data.exchanges_left;
      if (data.subscription) state.subscription = data.subscription;
      status();
      return;
    }
    // Not answered: the message goes back into the box to send again.
    mine.remove();
    message.value = text;
    count();
    if (code === 401) {
      show('signin');
      say($('signin-message'), 'Your session has ended. Please sign in again.');
      return;
    }
    if (code === 402) {
      say(out, '');
      const paused = data.error === 'trials_paused';
      const heading = $('offer-heading');
      heading.textContent = paused ? heading.dataset.paused : heading.dataset.used;
      $('offer-paused').hidden = !paused;
      state.exchanges_left = 0;
      if (state.subscription) state.subscription.active = false;
      status();
      $('offer-heading').focus();
      return;
    }
    say(out, sentence(data.error));
  });

  async function go(path, button) {
    const out = $('chat-message');
    button.disabled = true;
    const { status: code, data } = await call('POST', path);
    button.disabled = false;
    if (code === 200 && typeof data.url === 'string' && /^https?:\/\//.test(data.url)) {
      location.assign(data.url);
      return;
    }
    // Subscribed already (a page from before Stripe's events came): to
    // the portal that manages it, not a second Checkout.
    if (code === 409 && typeof data.portal === 'string' && /^https?:\/\//.test(data.portal)) {
      location.assign(data.portal);
      return;
    }
    say(out, sentence(data.error));
  }

  $('subscribe').addEventListener('click', (e) => go('/api/chat/subscribe', e.currentTarget));
  $('portal').addEventListener('click', (e) => go('/api/chat/portal', e.currentTarget));

  $('forget').addEventListener('click', async (e) => {
    if (!window.confirm('Delete every message of this conversation? This cannot be undone.')) return;
    const button = e.currentTarget;
    button.disabled = true;
    const { status: code, data } = await call('DELETE', '/api/chat');
    button.disabled = false;
    if (code === 200) {
      $('conversation').replaceChildren();
      $('empty').hidden = false;
      say($('chat-message'), 'Your conversation is deleted.', true);
      return;
    }
    say($('chat-message'), sentence(data.error));
  });

  // Deleting the account is asked again on the page itself, which says
  // what it erases and what happens to a subscription before anyone
  // confirms.
  $('erase').addEventListener('click', () => {
    $('erase-confirm').hidden = false;
    $('erase-heading').focus();
  });
  $('erase-no').addEventListener('click', () => {
    closeErase();
    $('erase').focus();
  });
  $('erase-yes').addEventListener('click', async (e) => {
    const button = e.currentTarget;
    const out = $('erase-message');
    button.disabled = true;
    say(out, 'Deleting your account…', true);
    const { status: code, data } = await call('DELETE', '/api/chat/account');
    button.disabled = false;
    if (code === 200 && data.erased === true) {
      state = null;
      $('conversation').replaceChildren();
      $('address').textContent = '';
      show('signin');
      $('erased').hidden = false;
      $('erased').focus();
      return;
    }
    if (code === 401) {
      show('signin');
      say($('signin-message'), 'Your session has ended. Please sign in again.');
      return;
    }
    say(out, sentence(data.error));
  });

  $('signout').addEventListener('click', async (e) => {
    const button = e.currentTarget;
    button.disabled = true;
    const { status: code, data } = await call('POST', '/api/chat/signout');
    button.disabled = false;
    if (code === 200 || code === 401) {
      state = null;
      $('conversation').replaceChildren();
      $('address').textContent = '';
      show('signin');
      return;
    }
    say($('chat-message'), sentence(data.error));
  });

  load();
})();
