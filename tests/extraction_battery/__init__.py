"""The extraction battery: short and structured pages in the shapes publishers really serve (issue 18).

Each page is a piece of content set in the chrome of a real template (chrome.py, README.md), with strings its
story must contain and strings it must not (the chrome's own boilerplate, plus the page's own teasers, comments
or widgets). tests/test_extraction_battery.py checks every page; bench/extraction.py scores ours and
trafilatura on the same pages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from extraction_battery.chrome import BOILERPLATE, CHROMES


@dataclass(frozen=True)
class Page:
    id: str
    chrome: str
    shape: str
    title: str
    content: str
    must: tuple[str, ...]
    must_not: tuple[str, ...] = ()
    after: str = ""      # boilerplate placed after the content, inside the template's main column
    lang: str = ""
    extra_must_not: tuple[str, ...] = field(default=())

    def html(self) -> bytes:
        kwargs = {"lang": self.lang} if self.lang else {}
        return CHROMES[self.chrome](self.title, self.content, self.after, **kwargs)

    def forbidden(self) -> tuple[str, ...]:
        return tuple(BOILERPLATE[self.chrome]) + self.must_not


def holds(page: Page, story: str) -> bool:
    return all(text in story for text in page.must) and not any(text in story for text in page.forbidden())


# Boilerplate blocks placed after a page's content (issue 18, item 2).
TEASERS_NAMED = """<section class="related-stories"><h2>More stories</h2><div class="card-grid">
<div class="card"><h3><a href="/news/1">Council approves new cycle lanes on the ring road</a></h3><p>The scheme, which will cost 2.4 million pounds, adds protected lanes on both sides of the ring road and is due to be finished by next spring.</p></div>
<div class="card"><h3><a href="/news/2">Library opening hours extended over the winter</a></h3><p>All branches will stay open until eight in the evening on weekdays from November, after a consultation found strong demand for later opening.</p></div>
<div class="card"><h3><a href="/news/3">Volunteers plant four hundred trees in Mill Park</a></h3><p>More than sixty volunteers turned out on Saturday morning to plant native oak, birch and rowan along the northern edge of the park.</p></div>
</div></section>"""
TEASERS_PLAIN = """<div><h2>You may also like</h2><div>
<div><h3><a href="/n/11">Harbour wall repairs to start in March</a></h3><p>Engineers will close the eastern walkway for six weeks while the damaged section of the harbour wall is rebuilt with granite blocks from the original quarry.</p></div>
<div><h3><a href="/n/12">New bus timetable for the coastal route</a></h3><p>Buses on the coastal route will run every twenty minutes during the summer season, with the first departure moved forward to half past six in the morning.</p></div>
<div><h3><a href="/n/13">Swimming pool reopens after refurbishment</a></h3><p>The leisure centre pool has a new accessible changing area, a moveable floor for the learner pool and solar panels that heat the water during the day.</p></div>
</div></div>"""
TEASERS_ARTICLES = """<div class="grid"><article><a href="/s/21"><h3>Road closure on Station Hill this weekend</h3></a><p>Station Hill will be closed between the railway bridge and the roundabout from Saturday at seven until Sunday evening for resurfacing work.</p></article>
<article><a href="/s/22"><h3>Farmers market moves to the cathedral green</h3></a><p>The monthly farmers market will be held on the cathedral green while the market square is repaved, with more than forty stalls expected each month.</p></article>
<article><a href="/s/23"><h3>Recycling centre introduces booking system</h3></a><p>Residents will need to book a time slot online before visiting the recycling centre, which the council says will cut queues on the main road.</p></article></div>"""
TEASER_WORDS = ("cycle lanes on the ring road", "open until eight in the evening", "native oak, birch and rowan")
TEASER_PLAIN_WORDS = ("granite blocks from the original quarry", "every twenty minutes", "moveable floor")
TEASER_ARTICLE_WORDS = ("railway bridge and the roundabout", "cathedral green while", "book a time slot")
COMMENTS = """<div id="comments" class="comments-area"><h2 class="comments-title">3 thoughts on this notice</h2><ol class="comment-list">
<li class="comment"><article class="comment-body"><footer class="comment-meta"><b class="fn">Pat</b> says: <time>2 May 2024</time></footer><div class="comment-content"><p>I have had a plot on the north field for twelve years and this is the first time I can remember the water being turned off this early in the season.</p></div></article></li>
<li class="comment"><article class="comment-body"><footer class="comment-meta"><b class="fn">Sam</b> says:</footer><div class="comment-content"><p>Could the committee consider leaving one standpipe on near the gate for those of us with seedlings in the greenhouse? It would make a big difference.</p></div></article></li>
<li class="comment"><article class="comment-body"><footer class="comment-meta"><b class="fn">Lee</b> says:</footer><div class="comment-content"><p>Thanks for the notice. I will bring water butts down at the weekend and anyone who needs help carrying them is welcome to ask at the shed.</p></div></article></li>
</ol></div>"""
COMMENT_WORDS = ("twelve years", "one standpipe on near the gate", "water butts down at the weekend")
COMMENTS_PLAIN = """<div><h3>Responses</h3>
<div><b>Morgan</b> <span>3 days ago</span><p>We were caught out by this last year too and had to drive the long way round through the industrial estate, which added twenty minutes each morning.</p><a href="#reply">Reply</a></div>
<div><b>Jesse</b> <span>2 days ago</span><p>Does anyone know whether the footpath along the canal will stay open during the works, or is that being closed as well for the whole period?</p><a href="#reply">Reply</a></div>
</div>"""
COMMENT_PLAIN_WORDS = ("through the industrial estate", "footpath along the canal")
USEFUL = """<div class="page-feedback"><form action="/feedback"><fieldset><legend>Was this page helpful?</legend>
<button name="r" value="yes">Yes</button><button name="r" value="no">No</button></fieldset></form></div>"""
USEFUL_PLAIN = """<form action="/rate"><p>Did you find what you were looking for?</p><button>Yes</button> <button>No</button></form>"""
COOKIE_PLAIN = """<div class="bottom-bar" id="js-bar"><p>This website uses cookies to give you the best experience. By continuing to browse you agree to our use of cookies and to our privacy policy.</p><button>OK, got it</button></div>"""

P = Page
PAGES: tuple[Page, ...] = (
    # --- one- or two-sentence notices -----------------------------------------------------------------------
    P("notice-council-decision", "municipal", "notice", "Decision 2024/117",
      "<p>Cabinet approved the Riverside car park tariffs on 5 March 2024.</p><p>They take effect on 1 April.</p>",
      ("Cabinet approved the Riverside car park tariffs on 5 March 2024.", "They take effect on 1 April.")),
    P("notice-article-two-paragraphs", "news", "notice", "Council decision: school crossing",
      "<p>The council agreed a new crossing outside Hill School.</p><p>Work starts in May.</p>",
      ("The council agreed a new crossing outside Hill School.", "Work starts in May.")),
    P("notice-govuk-one-sentence", "govuk", "notice", "Passport office closure",
      '<h1 class="govuk-heading-xl">Passport office closure</h1><p class="govuk-body">The Durham passport office is closed on 24 December.</p>',
      ("The Durham passport office is closed on 24 December.",)),
    P("notice-drupal-meeting-cancelled", "drupal", "notice", "March meeting cancelled",
      "<p>The parish council meeting on 14 March is cancelled.</p><p>The next meeting is on 11 April at 7pm in the village hall.</p>",
      ("meeting on 14 March is cancelled", "11 April at 7pm")),
    P("notice-wordpress-water-off", "wordpress", "notice", "Water off on the north field",
      "<!-- wp:paragraph --><p>The water on the north field will be off from Monday.</p><!-- /wp:paragraph -->",
      ("The water on the north field will be off from Monday.",), COMMENT_WORDS, after=COMMENTS),
    P("notice-joomla-slipway", "joomla", "notice", "Slipway closed",
      "<p>The slipway is closed for repairs until Friday.</p>",
      ("The slipway is closed for repairs until Friday.",)),
    P("notice-road-closure-teasers", "news", "notice", "Bridge Street closed tonight",
      "<p>Bridge Street is closed from 8pm tonight for gas repairs.</p><p>Diversions are signed.</p>",
      ("Bridge Street is closed from 8pm tonight for gas repairs.", "Diversions are signed."), TEASER_WORDS,
      after=TEASERS_NAMED),
    P("notice-plain-teasers", "news", "notice", "Polling station moved",
      "<p>The polling station for Ward 4 has moved to St Anne's church hall.</p>",
      ("The polling station for Ward 4 has moved to St Anne's church hall.",), TEASER_PLAIN_WORDS, after=TEASERS_PLAIN),
    P("notice-article-teasers", "municipal", "notice", "Bin collections delayed",
      "<p>Bin collections in the east of the town are running a day late this week.</p>",
      ("running a day late this week",), TEASER_ARTICLE_WORDS, after=TEASERS_ARTICLES),
    P("notice-correction", "news", "notice", "Correction",
      "<p><em>Correction:</em> An earlier version of this story gave the wrong date for the fete. It is on 6 July.</p>",
      ("gave the wrong date for the fete", "It is on 6 July.")),
    P("notice-page-moved", "govuk", "notice", "This page has moved",
      '<h1 class="govuk-heading-xl">This page has moved</h1><p class="govuk-body">Guidance on septic tanks is now part of <a href="/permits">environmental permits</a>.</p>',
      ("Guidance on septic tanks is now part of environmental permits.",)),
    P("notice-weather-warning", "drupal", "notice", "Yellow warning for ice",
      "<p><strong>Yellow warning:</strong> ice is likely on untreated roads overnight.</p><p>Gritters are out from 6pm.</p>",
      ("ice is likely on untreated roads overnight", "Gritters are out from 6pm.")),
    P("notice-comments-plain", "municipal", "notice", "Canal Road closure",
      "<p>Canal Road will be closed for six weeks from 2 September.</p>",
      ("Canal Road will be closed for six weeks from 2 September.",), COMMENT_PLAIN_WORDS, after=COMMENTS_PLAIN),
    P("notice-helpful-widget", "wordpress", "notice", "Plot inspections",
      "<p>Plot inspections take place on Saturday 8 June.</p>",
      ("Plot inspections take place on Saturday 8 June.",), ("Was this page helpful?",), after=USEFUL),
    P("notice-unnamed-cookie", "municipal", "notice", "Office closed on Friday",
      "<p>The town council office is closed on Friday for staff training.</p>" + COOKIE_PLAIN,
      ("closed on Friday for staff training",), ("uses cookies", "OK, got it")),
    P("notice-useful-plain", "joomla", "notice", "Clubhouse bar hours",
      "<p>The bar is open from 6pm on race evenings.</p>",
      ("The bar is open from 6pm on race evenings.",), ("Did you find what you were looking for",), after=USEFUL_PLAIN),
    # --- facts: <dl> and two-column tables ------------------------------------------------------------------
    P("facts-govuk-summary-list", "govuk", "facts", "Planning application 23/04567/FUL",
      '<h1 class="govuk-heading-l">Planning application 23/04567/FUL</h1><dl class="govuk-summary-list">'
      '<div class="govuk-summary-list__row"><dt class="govuk-summary-list__key">Address</dt><dd class="govuk-summary-list__value">14 Orchard Lane, Millbrook</dd></div>'
      '<div class="govuk-summary-list__row"><dt class="govuk-summary-list__key">Proposal</dt><dd class="govuk-summary-list__value">Single-storey rear extension</dd></div>'
      '<div class="govuk-summary-list__row"><dt class="govuk-summary-list__key">Status</dt><dd class="govuk-summary-list__value">Decided: granted</dd></div>'
      '<div class="govuk-summary-list__row"><dt class="govuk-summary-list__key">Decision date</dt><dd class="govuk-summary-list__value">3 May 2024</dd></div></dl>',
      ("14 Orchard Lane, Millbrook", "Single-storey rear extension", "Decided: granted", "3 May 2024")),
    P("facts-dl-job", "drupal", "facts", "Vacancy: Parish Clerk",
      "<dl><dt>Salary</dt><dd>£14,200 pro rata</dd><dt>Hours</dt><dd>15 per week</dd><dt>Closing date</dt><dd>30 June 2024</dd>"
      "<dt>Contact</dt><dd>chair@millbrook.example</dd></dl>",
      ("£14,200 pro rata", "15 per week", "30 June 2024", "chair@millbrook.example")),
    P("facts-dl-event", "wordpress", "facts", "Open day",
      "<p>Come and see the plots.</p><dl class=\"event-details\"><dt>When</dt><dd>Sunday 16 June, 10am to 3pm</dd><dt>Where</dt><dd>Riverside site, gate B</dd><dt>Cost</dt><dd>Free</dd></dl>",
      ("Come and see the plots.", "Sunday 16 June, 10am to 3pm", "Riverside site, gate B")),
    P("facts-dl-recall", "news", "facts", "Product recall: baby monitor",
      "<dl><dt>Product</dt><dd>NightOwl baby monitor, model NO-220</dd><dt>Hazard</dt><dd>The charger can overheat.</dd><dt>What to do</dt><dd>Stop using the charger and return it to the shop.</dd></dl>",
      ("NightOwl baby monitor, model NO-220", "The charger can overheat.", "return it to the shop")),
    P("facts-table-two-column", "municipal", "facts", "Allotment rents 2024",
      "<table class=\"data\"><tr><th>Full plot</th><td>£48.00</td></tr><tr><th>Half plot</th><td>£26.00</td></tr><tr><th>Water charge</th><td>£6.50</td></tr></table>",
      ("Full plot", "£48.00", "Half plot", "£26.00", "£6.50")),
    P("facts-table-contact", "joomla", "facts", "Contact the club",
      "<table><tbody><tr><td>Address</td><td>Quay Road, Harbourtown HT1 2QR</td></tr><tr><td>Telephone</td><td>01632 960 321</td></tr><tr><td>Office hours</td><td>Tuesday and Thursday, 10:00 to 13:00</td></tr></tbody></table>",
      ("Quay Road, Harbourtown HT1 2QR", "01632 960 321", "Tuesday and Thursday, 10:00 to 13:00")),
    P("facts-table-opening-hours", "drupal", "facts", "Library opening hours",
      "<table><caption>Opening hours</caption><tr><td>Monday</td><td>9:00 to 17:00</td></tr><tr><td>Wednesday</td><td>9:00 to 19:00</td></tr><tr><td>Saturday</td><td>10:00 to 13:00</td></tr></table>",
      ("Monday", "9:00 to 17:00", "9:00 to 19:00", "Saturday")),
    P("facts-infobox-news", "news", "facts", "Bypass: the facts",
      "<table class=\"factbox\"><tr><th>Length</th><td>4.2 miles</td></tr><tr><th>Cost</th><td>£86m</td></tr><tr><th>Opening</th><td>Autumn 2027</td></tr></table>",
      ("4.2 miles", "£86m", "Autumn 2027")),
    # --- content in <main> or div#content without <article> ---------------------------------------------------
    P("main-only-short", "govuk", "main", "Register to vote",
      '<h1 class="govuk-heading-xl">Register to vote</h1><p class="govuk-body">You need to register to vote before you can vote in elections.</p><p class="govuk-body">It takes about 5 minutes.</p>',
      ("You need to register to vote before you can vote in elections.", "It takes about 5 minutes.")),
    P("content-div-short", "municipal", "main", "Burial ground fees",
      "<p>Fees for the burial ground were reviewed in January.</p><p>The new fees apply from 1 April 2024.</p>",
      ("Fees for the burial ground were reviewed in January.", "The new fees apply from 1 April 2024.")),
    P("content-div-heading-sections", "municipal", "main", "Market charter",
      "<h2>History</h2><p>The market charter was granted in 1227.</p><h2>Today</h2><p>The market runs every Thursday.</p>",
      ("The market charter was granted in 1227.", "The market runs every Thursday.", "History")),
    P("main-only-service-start", "govuk", "main", "Apply for a blue badge",
      '<h1 class="govuk-heading-xl">Apply for a blue badge</h1><p class="govuk-body">You can apply online.</p><p class="govuk-body">It costs up to £10.</p>'
      '<a href="/apply" role="button" class="govuk-button govuk-button--start">Start now</a>',
      ("You can apply online.", "It costs up to £10.")),
    P("main-short-with-inset", "govuk", "main", "Bereavement Support Payment",
      '<h1 class="govuk-heading-xl">Bereavement Support Payment</h1><div class="govuk-inset-text">You must claim within 21 months.</div><p class="govuk-body">You may be able to get it if your partner died.</p>',
      ("You must claim within 21 months.", "You may be able to get it if your partner died.")),
    # --- bodies that are mostly lists ---------------------------------------------------------------------
    P("list-what-to-bring", "govuk", "list", "What to bring to your appointment",
      '<h1 class="govuk-heading-l">What to bring to your appointment</h1><p class="govuk-body">Bring:</p><ul class="govuk-list govuk-list--bullet">'
      "<li>your passport</li><li>a utility bill from the last 3 months</li><li>your National Insurance number</li><li>a pen</li></ul>",
      ("your passport", "a utility bill from the last 3 months", "your National Insurance number")),
    P("list-ordered-steps", "wordpress", "list", "How to book a plot",
      "<ol><li>Fill in the form at the shed.</li><li>Pay the deposit.</li><li>Collect your key from the secretary.</li></ol>",
      ("Fill in the form at the shed.", "Pay the deposit.", "Collect your key from the secretary.")),
    P("list-bin-days", "municipal", "list", "Christmas bin collections",
      "<ul><li>Tuesday 24 December: as normal</li><li>Wednesday 25 December: Saturday 28 December</li><li>Thursday 26 December: Sunday 29 December</li></ul>",
      ("Wednesday 25 December: Saturday 28 December", "Thursday 26 December: Sunday 29 December")),
    P("list-agenda", "drupal", "list", "Agenda: 14 May",
      "<ol><li>Apologies for absence</li><li>Minutes of the last meeting</li><li>Planning applications</li><li>Playground inspection report</li><li>Date of next meeting</li></ol>",
      ("Apologies for absence", "Minutes of the last meeting", "Playground inspection report")),
    P("list-race-results", "joomla", "list", "Thursday series results",
      "<ol><li>Kestrel, J. Ward, 41:12</li><li>Tern, A. Patel, 42:05</li><li>Osprey, M. Byrne, 43:40</li></ol>",
      ("Kestrel, J. Ward, 41:12", "Tern, A. Patel, 42:05")),
    # --- FAQs of short answers ------------------------------------------------------------------------------
    P("faq-details", "govuk", "faq", "Blue badge: questions",
      '<h1 class="govuk-heading-l">Blue badge: questions</h1>'
      '<details class="govuk-details"><summary class="govuk-details__summary"><span class="govuk-details__summary-text">How long does a badge last?</span></summary><div class="govuk-details__text">Up to 3 years.</div></details>'
      '<details class="govuk-details"><summary class="govuk-details__summary"><span class="govuk-details__summary-text">Can I use it abroad?</span></summary><div class="govuk-details__text">Yes, in most EU countries.</div></details>',
      ("How long does a badge last?", "Up to 3 years.", "Yes, in most EU countries.")),
    P("faq-headings", "wordpress", "faq", "Allotment FAQ",
      "<h3>Can I keep chickens?</h3><p>Yes, up to six hens.</p><h3>Can I have a bonfire?</h3><p>Only in November.</p><h3>Is there parking?</h3><p>Yes, by gate B.</p>",
      ("Can I keep chickens?", "Yes, up to six hens.", "Only in November.", "Yes, by gate B.")),
    P("faq-dl", "drupal", "faq", "Hall hire FAQ",
      "<dl><dt>How many people does the hall hold?</dt><dd>120 seated.</dd><dt>Is there a kitchen?</dt><dd>Yes, with an oven.</dd><dt>Can we play music?</dt><dd>Until 11pm.</dd></dl>",
      ("How many people does the hall hold?", "120 seated.", "Yes, with an oven.", "Until 11pm.")),
    P("faq-accordion", "joomla", "faq", "Membership questions",
      '<div class="accordion"><div class="accordion-item"><h2 class="accordion-header"><button class="accordion-button">Do I need my own boat?</button></h2><div class="accordion-collapse collapse"><div class="accordion-body">No, the club has six dinghies.</div></div></div>'
      '<div class="accordion-item"><h2 class="accordion-header"><button class="accordion-button">Is there a junior rate?</button></h2><div class="accordion-collapse collapse"><div class="accordion-body">Yes, £40 a year.</div></div></div></div>',
      ("No, the club has six dinghies.", "Yes, £40 a year.")),
    # --- data tables -----------------------------------------------------------------------------------
    P("table-election-results", "municipal", "table", "Election results: Ward 4",
      "<table border=\"1\"><thead><tr><th>Candidate</th><th>Party</th><th>Votes</th></tr></thead><tbody>"
      "<tr><td>Alex Moreno</td><td>Independent</td><td>1,204</td></tr><tr><td>Bea Clarke</td><td>Green</td><td>987</td></tr><tr><td>Chris Dunn</td><td>Labour</td><td>455</td></tr></tbody></table>"
      "<p>Turnout: 31%</p>",
      ("Alex Moreno", "1,204", "Bea Clarke", "987", "Turnout: 31%")),
    P("table-council-tax", "govuk", "table", "Council Tax bands",
      '<h1 class="govuk-heading-l">Council Tax bands</h1><table class="govuk-table"><thead class="govuk-table__head"><tr class="govuk-table__row"><th scope="col" class="govuk-table__header">Band</th><th scope="col" class="govuk-table__header">Annual charge</th></tr></thead>'
      '<tbody class="govuk-table__body"><tr class="govuk-table__row"><td class="govuk-table__cell">A</td><td class="govuk-table__cell">£1,412.55</td></tr><tr class="govuk-table__row"><td class="govuk-table__cell">B</td><td class="govuk-table__cell">£1,647.97</td></tr><tr class="govuk-table__row"><td class="govuk-table__cell">C</td><td class="govuk-table__cell">£1,883.40</td></tr></tbody></table>',
      ("£1,412.55", "£1,647.97", "£1,883.40")),
    P("table-tide-times", "joomla", "table", "Tide times: June",
      "<table class=\"table table-striped\"><tr><th>Date</th><th>High water</th><th>Height</th></tr><tr><td>1 June</td><td>06:42</td><td>4.8 m</td></tr><tr><td>2 June</td><td>07:25</td><td>4.6 m</td></tr><tr><td>3 June</td><td>08:11</td><td>4.3 m</td></tr></table>",
      ("06:42", "4.8 m", "07:25", "08:11")),
    P("table-spending", "drupal", "table", "Payments over £500: April",
      "<table><tr><th>Supplier</th><th>Purpose</th><th>Amount</th></tr><tr><td>Greenway Landscapes</td><td>Grass cutting</td><td>£1,240</td></tr><tr><td>Brightspark Electrical</td><td>Street lights</td><td>£860</td></tr></table>",
      ("Greenway Landscapes", "Grass cutting", "£1,240", "Brightspark Electrical")),
    # --- figures with captions ----------------------------------------------------------------------------
    P("figure-photo-of-the-week", "news", "figure", "Photo of the week",
      '<figure class="lead-image"><img src="/img/heron.jpg" alt="A heron on the weir"><figcaption>A heron waits on the weir at Low Mill, taken by reader Jo Park.</figcaption></figure>',
      ("A heron waits on the weir at Low Mill",)),
    P("figure-wp-image-block", "wordpress", "figure", "The new polytunnel",
      '<figure class="wp-block-image size-large"><img src="/wp-content/uploads/tunnel.jpg" alt=""><figcaption class="wp-element-caption">The new polytunnel on plot 12, built by members in April.</figcaption></figure>',
      ("The new polytunnel on plot 12, built by members in April.",)),
    P("figure-chart", "govuk", "figure", "Recycling rate 2023",
      '<h1 class="govuk-heading-l">Recycling rate 2023</h1><figure><img src="/chart.png" alt="Bar chart"><figcaption>Household recycling rate: 44.6% in 2023, up from 43.1%.</figcaption></figure>',
      ("Household recycling rate: 44.6% in 2023, up from 43.1%.",)),
    # --- lists of documents that are the page ---------------------------------------------------------------
    P("docs-minutes-list", "municipal", "documents", "Minutes 2024",
      '<ul class="docs"><li><a href="/docs/minutes-2024-01.pdf">Minutes 15 January 2024 (PDF, 210 KB)</a></li><li><a href="/docs/minutes-2024-02.pdf">Minutes 19 February 2024 (PDF, 188 KB)</a></li><li><a href="/docs/minutes-2024-03.pdf">Minutes 18 March 2024 (PDF, 240 KB)</a></li></ul>',
      ("Minutes 15 January 2024", "Minutes 19 February 2024", "Minutes 18 March 2024")),
    P("docs-govuk-attachments", "govuk", "documents", "Local plan evidence",
      '<h1 class="govuk-heading-l">Local plan evidence</h1><section class="gem-c-attachment"><h3 class="gem-c-attachment__title"><a class="govuk-link" href="/media/housing-need.pdf">Housing need assessment 2023</a></h3><p class="gem-c-attachment__metadata">PDF, 1.2 MB, 86 pages</p></section>'
      '<section class="gem-c-attachment"><h3 class="gem-c-attachment__title"><a class="govuk-link" href="/media/flood-risk.pdf">Strategic flood risk assessment</a></h3><p class="gem-c-attachment__metadata">PDF, 4.5 MB, 140 pages</p></section>',
      ("Housing need assessment 2023", "Strategic flood risk assessment")),
    P("docs-drupal-file-field", "drupal", "documents", "Annual accounts",
      '<div class="field field--name-field-documents"><div class="field__item"><span class="file file--mime-application-pdf"><a href="/sites/default/files/accounts-2023.pdf" type="application/pdf">Annual governance and accountability return 2023</a></span></div>'
      '<div class="field__item"><span class="file file--mime-application-pdf"><a href="/sites/default/files/audit-2023.pdf" type="application/pdf">External auditor report 2023</a></span></div></div>',
      ("Annual governance and accountability return 2023", "External auditor report 2023")),
    P("docs-joomla-downloads", "joomla", "documents", "Sailing instructions",
      '<p>Download the documents below.</p><ul><li><a href="/images/docs/si-2024.pdf">Sailing instructions 2024</a></li><li><a href="/images/docs/nor-2024.docx">Notice of race 2024</a></li><li><a href="/images/docs/entry.pdf">Entry form</a></li></ul>',
      ("Sailing instructions 2024", "Notice of race 2024", "Entry form")),
    # --- scripts where few characters carry a paragraph ----------------------------------------------------
    P("cjk-japanese-notice", "news", "cjk", "市役所の臨時休業",
      "<p>市役所は12月29日から1月3日まで休業します。</p><p>急ぎの手続きは支所をご利用ください。</p>",
      ("市役所は12月29日から1月3日まで休業します。", "急ぎの手続きは支所をご利用ください。"), lang="ja"),
    P("cjk-chinese-notice", "drupal", "cjk", "停水通知",
      "<p>本区将于六月五日上午九时至下午五时停水。</p><p>请居民提前储水。</p>",
      ("本区将于六月五日上午九时至下午五时停水。", "请居民提前储水。"), lang="zh-CN"),
    P("cjk-japanese-facts", "municipal", "cjk", "粗大ごみの出し方",
      "<p>粗大ごみは予約制です。</p><dl><dt>受付</dt><dd>平日8時30分から17時</dd><dt>料金</dt><dd>1点400円</dd></dl>",
      ("粗大ごみは予約制です。", "平日8時30分から17時", "1点400円"), lang="ja"),
    P("cjk-korean-notice", "wordpress", "cjk", "도서관 휴관 안내",
      "<p>도서관은 시설 점검으로 3월 4일 휴관합니다.</p>",
      ("도서관은 시설 점검으로 3월 4일 휴관합니다.",), lang="ko"),
    P("cjk-chinese-teasers", "news", "cjk", "公交线路调整",
      "<p>12路公交车自七月一日起改道运行。</p>",
      ("12路公交车自七月一日起改道运行。",), TEASER_WORDS, after=TEASERS_NAMED, lang="zh-CN"),
    # --- other shapes found on public-sector and news sites --------------------------------------------------
    P("press-release-short", "govuk", "other", "Minister visits flood defences",
      '<h1 class="govuk-heading-xl">Minister visits flood defences</h1><p class="govuk-body-l">The Environment Minister visited the new Calder flood defences on Monday.</p><p class="govuk-body">The scheme protects 1,200 homes.</p>',
      ("The Environment Minister visited the new Calder flood defences on Monday.", "The scheme protects 1,200 homes.")),
    P("event-listing", "drupal", "other", "Litter pick",
      "<p><strong>Saturday 20 April, 10am</strong></p><p>Meet at the war memorial. Gloves and bags provided.</p>",
      ("Saturday 20 April, 10am", "Meet at the war memorial.")),
    P("contact-address", "municipal", "other", "Contact us",
      "<address>Eastmere Town Council<br>The Guildhall<br>High Street<br>Eastmere EM1 4AB</address><p>Email: clerk@eastmere.example</p>",
      ("The Guildhall", "Eastmere EM1 4AB", "clerk@eastmere.example")),
    P("obituary-brief", "news", "other", "Former mayor dies aged 91",
      "<p>Margaret Lowe, mayor of the town in 1987, has died aged 91.</p><p>Her funeral is at St Peter's on 9 October.</p>",
      ("Margaret Lowe, mayor of the town in 1987, has died aged 91.", "Her funeral is at St Peter's on 9 October.")),
    P("status-service", "govuk", "other", "Service status",
      '<h1 class="govuk-heading-l">Service status</h1><div class="govuk-notification-banner" role="region"><div class="govuk-notification-banner__content"><p class="govuk-notification-banner__heading">Online payments are unavailable until 10am.</p></div></div><p class="govuk-body">You can still pay by phone.</p>',
      ("Online payments are unavailable until 10am.", "You can still pay by phone.")),
    P("consultation-short", "wordpress", "other", "Have your say on the new rules",
      "<p>We are consulting on new plot rules.</p><p>Send comments to the secretary by 31 July.</p>",
      ("We are consulting on new plot rules.", "Send comments to the secretary by 31 July."), COMMENT_WORDS,
      after=COMMENTS),
    P("long-article-with-teasers", "news", "other", "Town hall clock restored",
      "<p>The town hall clock is ticking again after a two-year restoration that saw every part of the Victorian mechanism taken apart, cleaned and rebuilt by specialists in a workshop in the north of the county.</p>"
      "<p>The clock, installed in 1871, stopped in 2022 when a worn gear wheel finally broke, and volunteers raised more than forty thousand pounds towards the cost of the repair.</p>"
      "<p>It will strike the hours again from Sunday.</p>",
      ("The town hall clock is ticking again", "volunteers raised more than forty thousand pounds", "It will strike the hours again from Sunday."),
      TEASER_WORDS + TEASER_PLAIN_WORDS, after=TEASERS_NAMED + TEASERS_PLAIN),
    P("blockquote-statement", "joomla", "other", "Statement from the commodore",
      "<blockquote><p>We are delighted to host the national championships next summer.</p></blockquote><p>Entries open in January.</p>",
      ("We are delighted to host the national championships next summer.", "Entries open in January.")),
)
