"""Page chrome of the battery: the header, navigation, banners and footers real templates put around a page's
content, rebuilt by hand from each template's markup (README.md names the source of each). Each function takes
the page's <title>, its content and optional extra boilerplate, and returns a whole page as bytes.

Every chrome's own boilerplate strings are in `BOILERPLATE[name]`: no page's story may contain them.
"""

from __future__ import annotations

GOVUK_BOILERPLATE = ["We use some essential cookies", "Accept additional cookies", "Skip to main content",
                     "Is this page useful", "Report a problem with this page", "Open Government Licence",
                     "Help us improve GOV.UK", "Explore the topic"]


def govuk(title: str, content: str, after: str = "", lang: str = "en") -> bytes:
    """GOV.UK Frontend page template (govuk-template, govuk-main-wrapper, two-thirds column, gem-c-feedback)."""
    return f"""<!DOCTYPE html>
<html lang="{lang}" class="govuk-template"><head><meta charset="utf-8"><title>{title} - GOV.UK</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="govuk:format" content="detailed_guide">
<link rel="stylesheet" href="/assets/application.css"><script>document.body.className += ' js-enabled';</script></head>
<body class="govuk-template__body">
<a href="#main-content" class="govuk-skip-link" data-module="govuk-skip-link">Skip to main content</a>
<div class="govuk-cookie-banner" data-nosnippet role="region" aria-label="Cookies on GOV.UK">
 <div class="govuk-cookie-banner__message govuk-width-container"><div class="govuk-grid-row"><div class="govuk-grid-column-two-thirds">
 <h2 class="govuk-cookie-banner__heading govuk-heading-m">Cookies on GOV.UK</h2>
 <div class="govuk-cookie-banner__content"><p class="govuk-body">We use some essential cookies to make this website work.</p>
 <p class="govuk-body">We'd like to set additional cookies to understand how you use GOV.UK, remember your settings and improve government services.</p></div>
 </div></div><div class="govuk-button-group"><button type="button" class="govuk-button">Accept additional cookies</button>
 <button type="button" class="govuk-button">Reject additional cookies</button><a class="govuk-link" href="/help/cookies">View cookies</a></div></div></div>
<header class="govuk-header" data-module="govuk-header"><div class="govuk-header__container govuk-width-container">
 <div class="govuk-header__logo"><a href="/" class="govuk-header__link govuk-header__link--homepage">
 <svg focusable="false" role="img" class="govuk-header__logotype" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 148 30" height="30" width="148" aria-label="GOV.UK"><title>GOV.UK</title><path d="M22.6 10.4c-1 .4-2-.1-2.4-1"></path></svg></a></div>
 <nav aria-label="Menu" class="govuk-header__navigation"><ul class="govuk-header__navigation-list">
 <li class="govuk-header__navigation-item"><a class="govuk-header__link" href="/browse/benefits">Benefits</a></li>
 <li class="govuk-header__navigation-item"><a class="govuk-header__link" href="/browse/driving">Driving and transport</a></li>
 <li class="govuk-header__navigation-item"><a class="govuk-header__link" href="/browse/housing-local-services">Housing and local services</a></li></ul></nav></div></header>
<div class="govuk-width-container">
<div class="govuk-phase-banner"><p class="govuk-phase-banner__content"><strong class="govuk-tag govuk-phase-banner__content__tag">Beta</strong>
 <span class="govuk-phase-banner__text">This is a new service. Help us improve GOV.UK by giving <a class="govuk-link" href="/feedback">your feedback</a>.</span></p></div>
<nav class="govuk-breadcrumbs" aria-label="Breadcrumb"><ol class="govuk-breadcrumbs__list">
 <li class="govuk-breadcrumbs__list-item"><a class="govuk-breadcrumbs__link" href="/">Home</a></li>
 <li class="govuk-breadcrumbs__list-item"><a class="govuk-breadcrumbs__link" href="/browse/housing-local-services">Housing and local services</a></li></ol></nav>
<main class="govuk-main-wrapper" id="main-content" role="main">
<div class="govuk-grid-row"><div class="govuk-grid-column-two-thirds">
{content}
</div>
<div class="govuk-grid-column-one-third"><div class="gem-c-related-navigation"><h2 class="gem-c-related-navigation__main-heading">Related content</h2>
 <ul class="gem-c-related-navigation__link-list"><li><a href="/council-tax">Council Tax</a></li><li><a href="/apply-for-a-parking-permit">Apply for a parking permit</a></li></ul>
 <h3 class="gem-c-related-navigation__sub-heading">Explore the topic</h3><ul><li><a href="/browse/housing-local-services/local-councils">Local councils and services</a></li></ul></div></div>
</div>
{after}
<div class="gem-c-feedback govuk-!-display-none-print" data-module="feedback">
 <div class="gem-c-feedback__prompt gem-c-feedback__js-show" tabindex="-1"><div class="gem-c-feedback__prompt-content">
 <div class="gem-c-feedback__prompt-questions js-prompt-questions"><h2 class="gem-c-feedback__prompt-question">Is this page useful?</h2>
 <ul class="gem-c-feedback__option-list"><li><button class="govuk-button gem-c-feedback__prompt-link">Yes <span class="govuk-visually-hidden">this page is useful</span></button></li>
 <li><button class="govuk-button gem-c-feedback__prompt-link">No <span class="govuk-visually-hidden">this page is not useful</span></button></li></ul></div></div>
 <div class="gem-c-feedback__prompt-questions"><button class="govuk-button gem-c-feedback__prompt-link">Report a problem with this page</button></div></div></div>
</main></div>
<footer class="govuk-footer" role="contentinfo"><div class="govuk-width-container"><div class="govuk-footer__meta">
 <h2 class="govuk-visually-hidden">Support links</h2><ul class="govuk-footer__inline-list"><li><a class="govuk-footer__link" href="/help">Help</a></li><li><a class="govuk-footer__link" href="/help/privacy-notice">Privacy</a></li></ul>
 <span class="govuk-footer__licence-description">All content is available under the <a class="govuk-footer__link" href="/ogl">Open Government Licence v3.0</a>, except where otherwise stated</span></div></div></footer>
<script src="/assets/govuk-frontend.min.js"></script><script>window.GOVUKFrontend.initAll()</script>
</body></html>""".encode()


WORDPRESS_BOILERPLATE = ["Designed with WordPress", "Leave a Reply", "Your email address will not be published",
                         "Post Comment", "Previous post", "Skip to content"]


def wordpress(title: str, content: str, after: str = "", lang: str = "en-US") -> bytes:
    """WordPress block theme Twenty Twenty-Four, single.html (wp-site-blocks, wp-block-post-content, wp-block-comments)."""
    return f"""<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="UTF-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} &#8211; Riverside Allotment Society</title><meta name="generator" content="WordPress 6.5">
<style id="wp-block-library-inline-css">.wp-block-post-title{{box-sizing:border-box}}</style></head>
<body class="post-template-default single single-post postid-117 single-format-standard wp-embed-responsive">
<div class="wp-site-blocks"><a class="skip-link screen-reader-text" href="#wp--skip-link--target">Skip to content</a>
<header class="wp-block-template-part"><div class="wp-block-group alignwide is-layout-flex">
 <p class="wp-block-site-title"><a href="https://allotments.example.org" rel="home">Riverside Allotment Society</a></p>
 <nav class="is-responsive wp-block-navigation" aria-label="Header navigation"><ul class="wp-block-navigation__container">
 <li class="wp-block-navigation-item"><a class="wp-block-navigation-item__content" href="/about/"><span class="wp-block-navigation-item__label">About</span></a></li>
 <li class="wp-block-navigation-item"><a class="wp-block-navigation-item__content" href="/plots/"><span class="wp-block-navigation-item__label">Plots</span></a></li>
 <li class="wp-block-navigation-item"><a class="wp-block-navigation-item__content" href="/news/"><span class="wp-block-navigation-item__label">News</span></a></li></ul></nav></div></header>
<main class="wp-block-group is-layout-constrained" id="wp--skip-link--target">
<div class="wp-block-group is-layout-flow"><h1 class="wp-block-post-title">{title}</h1>
 <div class="wp-block-template-part"><div class="wp-block-group is-layout-flex"><div class="wp-block-post-date"><time datetime="2024-05-02T09:00:00+00:00">May 2, 2024</time></div>
 <p>&mdash;</p><p>by</p><div class="wp-block-post-author-name"><a href="/author/secretary/" class="wp-block-post-author-name__link">Secretary</a></div></div></div></div>
<div class="entry-content wp-block-post-content is-layout-constrained">
{content}
</div>
<div class="wp-block-group is-layout-constrained"><nav class="wp-block-group is-layout-flex" aria-label="Posts">
 <div class="post-navigation-link-previous wp-block-post-navigation-link"><span class="wp-block-post-navigation-link__label">Previous post</span> <a href="/2024/04/seed-swap/" rel="prev">Seed swap in the pavilion</a></div></nav></div>
{after}
<div class="wp-block-comments"><div id="respond" class="comment-respond wp-block-post-comments-form">
 <h3 id="reply-title" class="comment-reply-title">Leave a Reply</h3>
 <form action="/wp-comments-post.php" method="post" id="commentform" class="comment-form"><p class="comment-notes"><span id="email-notes">Your email address will not be published.</span> Required fields are marked *</p>
 <p class="comment-form-comment"><label for="comment">Comment</label><textarea id="comment" name="comment"></textarea></p>
 <p class="form-submit wp-block-button"><input name="submit" type="submit" id="submit" class="wp-block-button__link" value="Post Comment"></p></form></div></div>
</main>
<footer class="wp-block-template-part"><div class="wp-block-group alignwide is-layout-flow">
 <div class="wp-block-columns"><div class="wp-block-column"><h2 class="wp-block-site-title"><a href="/" rel="home">Riverside Allotment Society</a></h2>
 <p class="wp-block-site-tagline">Growing together since 1921</p></div></div>
 <p class="has-text-align-center">Designed with <a href="https://wordpress.org" rel="nofollow">WordPress</a></p></div></footer>
</div><script id="wp-interactivity">/* wp */</script></body></html>""".encode()


DRUPAL_BOILERPLATE = ["Powered by Drupal", "Skip to main content", "Add new comment", "Breadcrumb",
                      "Main navigation", "Log in"]


def drupal(title: str, content: str, after: str = "", lang: str = "en") -> bytes:
    """Drupal 10 core theme Olivero, node full view (region--content, node__content, text-content, comments)."""
    return f"""<!DOCTYPE html>
<html lang="{lang}" dir="ltr"><head><meta charset="utf-8"><meta name="Generator" content="Drupal 10 (https://www.drupal.org)">
<title>{title} | Millbrook Parish Council</title><link rel="stylesheet" media="all" href="/core/themes/olivero/css/base/base.css"></head>
<body class="path-node page-node-type-article">
<a href="#main-content" class="visually-hidden focusable skip-link">Skip to main content</a>
<div class="dialog-off-canvas-main-canvas" data-off-canvas-main-canvas><div id="page-wrapper" class="page-wrapper"><div id="page">
<header id="header" class="site-header" data-drupal-selector="site-header" role="banner"><div class="site-header__fixable"><div class="site-header__inner"><div class="site-header__inner__container container">
 <div id="block-olivero-site-branding" class="site-branding block block-system block-system-branding-block"><div class="site-branding__inner">
 <div class="site-branding__text"><div class="site-branding__name"><a href="/" title="Home" rel="home">Millbrook Parish Council</a></div></div></div></div>
 <div class="header-nav-overlay" data-drupal-selector="header-nav-overlay"></div>
 <nav id="block-olivero-main-menu" class="primary-nav block block-menu navigation menu--main" aria-labelledby="block-olivero-main-menu-menu" role="navigation">
 <h2 class="visually-hidden block__title" id="block-olivero-main-menu-menu">Main navigation</h2><ul class="menu primary-nav__menu primary-nav__menu--level-1">
 <li class="primary-nav__menu-item"><a href="/" class="primary-nav__menu-link">Home</a></li><li class="primary-nav__menu-item"><a href="/meetings" class="primary-nav__menu-link">Meetings</a></li>
 <li class="primary-nav__menu-item"><a href="/user/login" class="primary-nav__menu-link">Log in</a></li></ul></nav></div></div></div></header>
<div id="main-wrapper" class="layout-main-wrapper layout-container"><div id="main" class="layout-main"><div class="main-content">
<a id="main-content" tabindex="-1"></a><div class="main-content__container container">
<div class="region region--breadcrumb grid-full layout--pass--content-medium"><div id="block-olivero-breadcrumbs" class="block block-system block-system-breadcrumb-block">
 <nav class="breadcrumb" role="navigation" aria-labelledby="system-breadcrumb"><h2 id="system-breadcrumb" class="visually-hidden">Breadcrumb</h2>
 <div class="breadcrumb__content"><ol class="breadcrumb__list"><li class="breadcrumb__item"><a href="/" class="breadcrumb__link">Home</a></li></ol></div></nav></div></div>
<div class="region region--content-above grid-full layout--pass--content-medium"><div id="block-olivero-page-title" class="block block-core block-page-title-block">
 <h1 class="title page-title"><span class="field field--name-title">{title}</span></h1></div></div>
<main role="main"><div class="region region--content grid-full layout--pass--content-medium" id="content">
<div data-drupal-messages-fallback class="hidden messages-list"></div>
<div id="block-olivero-content" class="block block-system block-system-main-block">
<article data-history-node-id="42" class="node node--type-article node--promoted node--view-mode-full">
 <div class="node__meta"><span>By <span class="field field--name-uid"><span>clerk</span></span></span>, <span class="node__meta-date">12 March, 2024</span></div>
 <div class="node__content">
 <div class="text-content clearfix field field--name-body field--type-text-with-summary field--label-hidden field__item">
{content}
 </div></div>
{after}
 <section data-drupal-selector="comments" class="comments"><h2 class="comments__title">Add new comment</h2>
 <form class="comment-comment-form comment-form" action="/comment/reply/node/42/comment" method="post"><div class="form-item"><label for="edit-comment-body">Comment</label><textarea id="edit-comment-body"></textarea></div><input type="submit" value="Save"></form></section>
</article></div></div></main></div></div></div></div>
<footer class="site-footer"><div class="site-footer__inner container"><div class="region region--footer-bottom grid-full">
 <div id="block-olivero-powered" class="block block-system block-system-powered-by-block"><span>Powered by <a href="https://www.drupal.org">Drupal</a></span></div></div></div></footer>
</div></div></div></body></html>""".encode()


JOOMLA_BOILERPLATE = ["Latest Articles", "Back to Top", "Written by", "Details", "Hits:", "Main Menu"]


def joomla(title: str, content: str, after: str = "", lang: str = "en-gb") -> bytes:
    """Joomla 4/5 site template Cassiopeia, com_content article view (container-component, item-page,
    dl.article-info, itemprop=articleBody, a right sidebar module)."""
    return f"""<!DOCTYPE html>
<html lang="{lang}" dir="ltr"><head><meta charset="utf-8"><meta name="generator" content="Joomla! - Open Source Content Management">
<title>{title}</title><link href="/media/templates/site/cassiopeia/css/template.min.css" rel="stylesheet"></head>
<body class="site com_content wrapper-static view-article no-layout no-task itemid-101">
<header class="header container-header full-width"><div class="grid-child"><div class="navbar-brand"><a class="brand-logo" href="/"><span title="Harbourtown Sailing Club">Harbourtown Sailing Club</span></a></div></div>
 <div class="grid-child container-nav"><ul class="mod-menu mod-list nav "><li class="nav-item item-101 default current active"><a href="/" aria-current="page">Home</a></li>
 <li class="nav-item item-102"><a href="/racing">Racing</a></li><li class="nav-item item-103"><a href="/training">Training</a></li></ul></div></header>
<div class="site-grid">
<div class="grid-child container-component">
<nav class="mod-breadcrumbs__wrapper" aria-label="Breadcrumbs"><ol class="mod-breadcrumbs breadcrumb px-3 py-2"><li class="mod-breadcrumbs__here float-start">You are here: &#160;</li><li class="mod-breadcrumbs__item breadcrumb-item"><a href="/" class="pathway"><span>Home</span></a></li></ol></nav>
<div id="system-message-container" aria-live="polite"></div>
<main>
<div class="com-content-article item-page" itemscope itemtype="https://schema.org/Article"><meta itemprop="inLanguage" content="en-GB">
 <div class="page-header"><h1 itemprop="headline">{title}</h1></div>
 <dl class="article-info text-muted"><dt class="article-info-term">Details</dt>
 <dd class="createdby" itemprop="author" itemscope itemtype="https://schema.org/Person">Written by: <span itemprop="name">Club Secretary</span></dd>
 <dd class="category-name">Category: <a href="/news" itemprop="genre">Club news</a></dd>
 <dd class="published"><time datetime="2024-06-01T10:00:00+00:00" itemprop="datePublished">Published: 01 June 2024</time></dd>
 <dd class="hits"><meta itemprop="interactionCount" content="UserPageVisits:311">Hits: 311</dd></dl>
 <div itemprop="articleBody" class="com-content-article__body">
{content}
 </div>
{after}
</div></main></div>
<div class="grid-child container-sidebar-right"><div class="sidebar-right card "><h3 class="card-header ">Latest Articles</h3><div class="card-body">
 <ul class="mod-articleslatest latestnews mod-list"><li itemscope itemtype="https://schema.org/Article"><a href="/news/regatta" itemprop="url"><span itemprop="name">Autumn regatta results</span></a></li>
 <li itemscope itemtype="https://schema.org/Article"><a href="/news/agm" itemprop="url"><span itemprop="name">Annual general meeting</span></a></li></ul></div></div>
 <div class="sidebar-right card "><h3 class="card-header ">Main Menu</h3><div class="card-body"><ul class="mod-menu mod-list nav "><li><a href="/">Home</a></li><li><a href="/contact">Contact</a></li></ul></div></div></div>
</div>
<footer class="container-footer footer full-width"><div class="grid-child"><p>Harbourtown Sailing Club, Quay Road.</p></div></footer>
<a href="#top" id="back-top" class="back-to-top-link" aria-label="Back to Top"><span class="icon-arrow-up icon-fw" aria-hidden="true"></span></a>
</body></html>""".encode()


MUNICIPAL_BOILERPLATE = ["In this section", "Site map", "Text only", "Follow us", "Translate this page",
                         "Town Hall, Market Square"]


def municipal(title: str, content: str, after: str = "", lang: str = "en") -> bytes:
    """An older municipal CMS layout (table-based shell; a left navigation cell; the content in
    <td id="content"> with no <main> or <article>), as many small councils' sites still serve."""
    return f"""<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN">
<html lang="{lang}"><head><meta http-equiv="Content-Type" content="text/html; charset=utf-8"><title>{title} - Eastmere Town Council</title>
<link rel="stylesheet" href="/css/site.css" type="text/css"></head>
<body><div id="wrapper">
<div id="topbar"><a href="/textonly">Text only</a> | <a href="/sitemap">Site map</a> | <a href="/translate">Translate this page</a></div>
<div id="banner"><img src="/img/crest.gif" alt="Eastmere Town Council crest"></div>
<table width="100%" cellpadding="0" cellspacing="0" border="0" class="layout"><tr>
<td valign="top" width="200" id="leftnav"><div class="navhead">In this section</div>
 <div class="navlink"><a href="/council/meetings">Meetings</a></div><div class="navlink"><a href="/council/councillors">Councillors</a></div>
 <div class="navlink"><a href="/council/finance">Finance</a></div><div class="navlink"><a href="/council/notices">Public notices</a></div></td>
<td valign="top" id="content"><h1>{title}</h1>
{content}
{after}
</td></tr></table>
<div id="footer">Eastmere Town Council, Town Hall, Market Square, Eastmere. Tel 01234 567890.<br>
 <a href="/privacy">Privacy</a> | <a href="/accessibility">Accessibility</a> | Follow us: <a href="https://social.example/eastmere">Social</a></div>
</div></body></html>""".encode()


NEWS_BOILERPLATE = ["Subscribe to our newsletter", "Sign in", "Most read", "Terms of use", "Breaking news",
                    "Advertisement"]


def news(title: str, content: str, after: str = "", lang: str = "en") -> bytes:
    """A regional news site's story page (schema.org NewsArticle; a breaking-news ticker; the story in
    <article>; a newsletter form and a most-read rail), the shape of common newspaper CMS templates."""
    return f"""<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8"><title>{title} | The Valley Courier</title>
<meta property="og:title" content="{title}"><meta property="og:type" content="article">
<script type="application/ld+json">{{"@context":"https://schema.org","@type":"NewsArticle","headline":"{title}"}}</script>
<script async src="https://ads.example/gpt.js"></script></head>
<body class="story-page">
<div class="top-strip"><a href="/signin">Sign in</a> <a href="/subscribe">Subscribe</a></div>
<header class="masthead"><a class="logo" href="/">The Valley Courier</a>
 <nav class="sections"><a href="/news">News</a> <a href="/sport">Sport</a> <a href="/business">Business</a> <a href="/opinion">Opinion</a></nav></header>
<div class="ticker"><span class="ticker-label">Breaking news</span> <a href="/news/flood-warning">Flood warning issued for the lower valley as river levels rise</a></div>
<div class="ad-container"><span>Advertisement</span><div id="div-gpt-ad-top"></div></div>
<div class="page"><div class="col-main">
<article class="story" itemscope itemtype="https://schema.org/NewsArticle">
<h1 itemprop="headline">{title}</h1>
<div class="byline">By <a href="/staff/kim-hale" rel="author">Kim Hale</a> &middot; <time datetime="2024-09-14T08:10:00Z">14 September 2024</time></div>
<div class="story-body" itemprop="articleBody">
{content}
</div>
</article>
{after}
</div>
<div class="col-rail"><section class="most-read"><h2>Most read</h2><ol>
 <li><a href="/news/a">Bypass plan back on the table</a></li><li><a href="/news/b">School wins national award</a></li><li><a href="/news/c">Market hall reopens</a></li></ol></section></div>
</div>
<div class="newsletter-box"><h2>Subscribe to our newsletter</h2><p>Get the valley's top stories in your inbox every morning, free of charge, and be the first to hear about local events.</p>
 <form action="/newsletter"><input type="email" name="email" placeholder="Email address"><button>Sign up</button></form></div>
<footer class="site-footer"><p>&copy; 2024 Valley Courier Media. <a href="/terms">Terms of use</a> <a href="/privacy">Privacy</a></p></footer>
</body></html>""".encode()


CHROMES = {"govuk": govuk, "wordpress": wordpress, "drupal": drupal, "joomla": joomla, "municipal": municipal,
           "news": news}
BOILERPLATE = {"govuk": GOVUK_BOILERPLATE, "wordpress": WORDPRESS_BOILERPLATE, "drupal": DRUPAL_BOILERPLATE,
               "joomla": JOOMLA_BOILERPLATE, "municipal": MUNICIPAL_BOILERPLATE, "news": NEWS_BOILERPLATE}
