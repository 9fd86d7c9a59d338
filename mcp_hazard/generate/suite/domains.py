"""The suite's domains: for each, the words a person would use about it and the names in its invented world.

A domain has **items** (books, wines, vehicles, ...) in three categories, each item made by or held with an **owner**
(a publisher, a vineyard, a depot, ...). Items carry a measure with a unit, a price, a date and a yes/no property;
owners carry a city, a number of days and a minimum order. The values themselves are drawn by world.py; here are the
names and the phrases, so that every question reads as a person would ask it. `{x}` in a phrase is the item as the
prompt names it (`"The Glass Orchard"`), `{o}` the owner.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Domain:
    id: str
    title: str
    item: str  # singular noun: "book"
    items: str  # plural noun
    id_prefix: str  # item ids: PREFIX-nnnn
    id_label: str  # what the id is called: "catalogue number"
    category_label: str  # "genre"
    categories: tuple[str, str, str]
    names: tuple[str, ...]  # 15 item names, 5 per category in order
    measure: str  # field name, with its unit suffix: "pages"
    measure_label: str  # "page count"
    unit: str  # "pages"
    measure_range: tuple[int, int]
    currency: str  # EUR, GBP, USD or CHF
    date_field: str  # "published_on"
    date_q: str  # "When was {x} published?"
    flag_field: str  # "signed"
    flag_q: str  # "Is {x} a signed copy?"
    flag_word: str  # "signed" (an adjective for a list question)
    owner: str  # "publisher"
    owners: str
    owner_prefix: str
    owner_names: tuple[str, ...]  # 5
    days_field: str  # "reprint_days"
    days_label: str  # "reprint lead time"
    arrival_q: str  # "If we reorder {x} from its publisher on {d}, on what date should the copies arrive?"
    measure_q: str  # "How many pages does {x} have?"
    price_q: str  # "How much does {x} cost?"
    min_label: str  # "minimum order"
    price_range: tuple[int, int]  # whole units of the currency
    kind_phrase: str = "{c} {item}"  # an item of category c: "Poetry book"
    cheapest: str = "cheapest"  # the item with the lowest price
    priciest: str = "most expensive"
    price_label: str = "price"
    owner_q: str = "Which {owner} is {x} with?"  # asks for the owner's name
    request: str = "order {x} from its supplier"  # what starts the owner's days: "we {request}"
    event: str = "delivery"  # what the days lead to
    category_in: str = "in"  # "in the same section", "on the same shelf", "of the same colour"


CITIES = ("Orinth", "Velmora", "Castrane", "Tessaly Bay", "Marrowick", "Calderreach", "Pressa", "Olyndra")

# fmt: off
DOMAINS: tuple[Domain, ...] = (
    Domain(
        owner_q='Which publisher publishes {x}?',
        request='reorder {x} from its publisher', event='delivery',
        id='bookshop', title='Backlist of the Quillmere Bookshop', item='book', items='books', id_prefix='BK',
        id_label='catalogue number', category_label='section', categories=('Poetry', 'History', 'Crime'),
        names=('The Glass Orchard', 'Salt and Lantern', 'Harbour Psalms', 'Nine Winters', 'Ash Litany',
               'The Tin Crown', 'Ledgers of Orinth', 'A Short Siege', 'Rivers Unmapped', 'The Last Toll',
               'Cold Marsh Road', 'The Velvet Alibi', 'Nobody at Nine', 'Quiet Knives', 'The Paper Witness'),
        measure='pages', measure_label='page count', unit='pages', measure_range=(120, 880), currency='EUR',
        date_field='published_on', date_q='When was {x} published?', flag_field='signed',
        flag_q='Is our copy of {x} signed by the author?', flag_word='signed', owner='publisher',
        owners='publishers', owner_prefix='PUB',
        owner_names=('Hollin & Vane', 'Marrow Street Press', 'Teasel Books', 'Calder House', 'Orrin Folio'),
        days_field='restock_days', days_label='restock time',
        arrival_q='If we reorder {x} from its publisher on {d}, on what date should the copies arrive?',
        measure_q='How many pages does {x} have?', price_q='How much does {x} cost in the shop?',
        min_label='minimum order', price_range=(8, 60),
    ),
    Domain(
        owner_q='Which vineyard makes {x}?',
        request='order {x} from its vineyard', event='delivery',
        id='wine-cellar', title='Cellar list of the Brannock wine merchant', item='wine', items='wines',
        id_prefix='WN', id_label='bin number', category_label='colour', category_in='of',
        categories=('Red', 'White', 'Sparkling'),
        names=('Corvel Ridge Syrah', 'Old Yarrow Merlot', 'Stonefold Tempranillo', 'Dusk Hill Malbec',
               'Brackwater Grenache', 'Pale Heron Riesling', 'Alder Bank Chardonnay', 'Saltmeadow Albarino',
               'Quince Lane Viognier', 'Larchmoor Semillon', 'Fenwick Brut', 'Silver Tern Cremant',
               'Orchard Bell Cava', 'Marlow Cuvee', 'Glimmerdale Prosecco'),
        measure='bottles', measure_label='stock', unit='bottles', measure_range=(12, 480), currency='GBP',
        date_field='drink_by', date_q='Until what date should {x} be drunk?', flag_field='organic',
        flag_q='Is {x} certified organic?', flag_word='certified organic', owner='vineyard', owners='vineyards',
        owner_prefix='VY',
        owner_names=('Domaine Corvel', 'Yarrow Estate', 'Heron Valley Wines', 'Tern Cellars', 'Bell Orchard Vineyards'),
        days_field='shipping_days', days_label='shipping time',
        arrival_q='If we order {x} from its vineyard on {d}, on what date should it be delivered?',
        measure_q='How many bottles of {x} do we hold?', price_q='What is the price of a bottle of {x}?',
        min_label='minimum order', price_range=(9, 140), price_label='bottle price',
    ),
    Domain(
        owner_q='Which depot is {x} based at?',
        request='ask the depot of {x} to send it to head office', event='transfer',
        id='car-rental', title='Fleet of Ardent Car Hire', item='car', items='cars', id_prefix='CAR',
        id_label='fleet number', category_label='vehicle class', categories=('Compact', 'Estate', 'Family'),
        names=('Lumen Hatch', 'Pico City', 'Sprig Mini', 'Vesta Five', 'Kestrel Go', 'Atlas Tourer', 'Birch Wagon',
               'Ridgeway Estate', 'Fallow Long', 'Marten Sport', 'Haulier Nine', 'Cargo Twelve', 'Drayman Crew',
               'Porter Max', 'Trundle Box'),
        measure='mileage_km', measure_label='odometer reading', unit='km', measure_range=(8000, 96000),
        currency='EUR', date_field='next_service', date_q='When is {x} next due for a service?',
        flag_field='electric', flag_q='Is {x} electric?', flag_word='electric', owner='depot', owners='depots',
        owner_prefix='DEP',
        owner_names=('Northgate Depot', 'Quayside Yard', 'Airfield Lot', 'Station Forecourt', 'Millbrook Garage'),
        days_field='transfer_days', days_label='transfer time',
        arrival_q='If we ask the depot of {x} on {d} to send it to head office, on what date will it arrive?',
        measure_q='What is the odometer reading of {x}?', price_q='What is the daily rate for {x}?',
        min_label='minimum booking value', price_range=(30, 190), price_label='daily rate',
    ),
    Domain(
        owner_q='Which booking agency represents {x}?',
        request='send the contract for {x} to its booking agency', event='signed contract',
        id='festival', title='Line-up of the Harrowfield summer festival', item='act', items='acts', id_prefix='ACT',
        id_label='act number', category_label='stage', category_in='on',
        categories=('Main Stage', 'Forest Stage', 'Meadow Stage'),
        names=('The Lanternfish', 'Mirel Oduya', 'Copper Saints', 'Velvet Static', 'Harbour Choir', 'Pine & Ember',
               'Sorrel Quartet', 'The Low Moons', 'Ilse Marrow Trio', 'Birchlight', 'Gutter Orchestra',
               'Night Ferry', 'The Tallow Kings', 'Raw Cassette', 'Dune Parade'),
        measure='set_length', measure_label='set length', unit='minutes', measure_range=(25, 150), currency='EUR',
        date_field='performs_on', date_q='On what date does {x} perform?', flag_field='headliner',
        flag_q='Is {x} a headliner?', flag_word='headlining', owner='booking agency', owners='booking agencies',
        owner_prefix='AGY',
        owner_names=('Lowtide Booking', 'Kestrel Artists', 'Ferrous Agency', 'Greenroom Bureau', 'Amber Stage Co'),
        days_field='contract_days', days_label='contract turnaround',
        arrival_q='If we send the contract for {x} to its booking agency on {d}, on what date should we get it back?',
        measure_q='How long is the set of {x}?', price_q='What fee does {x} charge?', min_label='minimum fee',
        price_range=(1500, 40000), kind_phrase='{item} on the {c}', price_label='fee',
    ),
    Domain(
        owner_q='Which lender has lent us {x}?',
        request='return {x} to its lender', event='courier delivery',
        id='museum', title='Loans register of the Calder Museum', item='artwork', items='artworks', id_prefix='ART',
        id_label='inventory number', category_label='gallery', categories=('Sculpture', 'Painting', 'Textile'),
        names=('The Drowned Bell', 'Figure in Salt', 'Bronze Heron', 'The Sleeping Mason', 'Iron Lantern',
               'Harvest at Velmora', 'Portrait of a Ferryman', 'Blue Quay at Dusk', 'The Orchard Wall',
               'Storm over Pressa', "The Weaver's Map", 'Saffron Hanging', 'Tidewater Quilt', 'The Loom Garden',
               'Marsh Tapestry'),
        measure='weight_kg', measure_label='weight', unit='kg', measure_range=(3, 900), currency='EUR',
        date_field='loan_ends', date_q='When does the loan of {x} end?', flag_field='on_display',
        flag_q='Is {x} on display at the moment?', flag_word='on display', owner='lender', owners='lenders',
        owner_prefix='LND',
        owner_names=('Orinth City Gallery', 'Vane Collection', 'Marrowick Trust', 'Pressa Civic Museum',
                     'Tessaly Foundation'),
        days_field='courier_days', days_label='courier time',
        arrival_q='If we return {x} to its lender on {d}, on what date will the courier deliver it?',
        measure_q='How much does {x} weigh?', price_q='What is the insured value of {x}?',
        min_label='minimum loan fee', price_range=(4000, 900000), cheapest='least valuable',
        priciest='most valuable', price_label='insured value',
    ),
    Domain(
        owner_q='Which instructor teaches {x}?',
        request='ask the instructor of {x} to arrange cover', event='cover',
        id='gym', title='Timetable of the Fellside Fitness club', item='class', items='classes', id_prefix='CLS',
        id_label='class code', category_label='studio', categories=('Studio A', 'Studio B', 'Pool'),
        names=('Sunrise Flow', 'Kettle Forge', 'Core Circuit', 'Box Fit Nine', 'Stretch and Reset', 'Ride Harder',
               'Power Hour', 'Ladder Sprints', 'Balance Lab', 'Midnight Spin', 'Aqua Tempo', 'Lane Builders',
               'Deep Water Run', 'Float Stretch', 'Harbour Swim'),
        measure='duration', measure_label='length', unit='minutes', measure_range=(20, 120), currency='GBP',
        date_field='term_starts', date_q='On what date does the next term of {x} start?',
        flag_field='beginner_friendly', flag_q='Is {x} suitable for beginners?', flag_word='beginner-friendly',
        owner='instructor', owners='instructors', owner_prefix='INS',
        owner_names=('Maren Holt', 'Tobias Ferrin', 'Ada Quist', 'Jonah Pell', 'Rosa Lindqvist'),
        days_field='notice_days', days_label='cover notice',
        arrival_q='If we ask the instructor of {x} on {d} to arrange cover, from what date will the cover start?',
        measure_q='How long is a session of {x}?', price_q='How much does a drop-in session of {x} cost?',
        min_label='minimum block booking', price_range=(6, 25), price_label='drop-in price',
    ),
    Domain(
        owner_q='Which operator runs {x}?',
        request='charter {x} from its operator', event='arrival at our berth',
        id='shipping', title='Charter desk of the Orrin Line', item='vessel', items='vessels', id_prefix='VSL',
        id_label='registry number', category_label='fleet', categories=('Tanker', 'Bulk', 'Feeder'),
        names=('Morning Tern', 'Ardent Swell', 'Brine Lady', 'Cape Orinth', 'Salt Regent', 'Granite Bay',
               'Iron Shoal', 'Harrow Star', 'Coal Maiden', 'Basalt Queen', 'Little Pressa', 'Quay Runner',
               'Marsh Hopper', 'Tessaly Feeder', 'Wren of Calder'),
        measure='capacity_t', measure_label='capacity', unit='tonnes', measure_range=(900, 64000), currency='USD',
        date_field='next_port_call', date_q='When does {x} make its next port call?', flag_field='refrigerated',
        flag_q='Does {x} have refrigerated holds?', flag_word='refrigerated', owner='operator', owners='operators',
        owner_prefix='OPR',
        owner_names=('Gull Maritime', 'Keel & Crane', 'Northwater Shipping', 'Ballast Partners', 'Orrin Tramp Co'),
        days_field='positioning_days', days_label='positioning time',
        arrival_q='If we charter {x} from its operator on {d}, on what date can it be at our berth?',
        measure_q='What is the cargo capacity of {x}?', price_q='What is the daily charter rate of {x}?',
        min_label='minimum charter value', price_range=(8000, 45000), price_label='daily charter rate',
    ),
    Domain(
        owner_q='Which manufacturer makes {x}?',
        request='order {x} from its manufacturer', event='delivery',
        id='pharmacy', title='Dispensary stock of the Larkspur Pharmacy', item='medicine', items='medicines',
        id_prefix='MED', id_label='product code', category_label='shelf', category_in='on',
        categories=('Pain relief', 'Allergy', 'Digestion'),
        names=('Calvidol 200', 'Feverine Night', 'Aspira Soft', 'Dolorex Gel', 'Migrane Ease', 'Histalor',
               'Pollenguard', 'Sneezefree Spray', 'Rhinex Drops', 'Allerclear 10', 'Gastrobal', 'Digestin Plus',
               'Acidawn', 'Colimint', 'Lactora'),
        measure='units', measure_label='stock', unit='packs', measure_range=(6, 240), currency='EUR',
        date_field='expires_on', date_q='When does our current batch of {x} expire?', flag_field='prescription_only',
        flag_q='Is {x} prescription-only?', flag_word='prescription-only', owner='manufacturer',
        owners='manufacturers', owner_prefix='MFR',
        owner_names=('Velmora Pharma', 'Arclight Labs', 'Pressa Generics', 'Northfen Health', 'Quillon Biotech'),
        days_field='delivery_days', days_label='delivery time',
        arrival_q='If we order {x} from its manufacturer on {d}, on what date should the delivery arrive?',
        measure_q='How many packs of {x} do we have in stock?', price_q='What is the shelf price of {x}?',
        min_label='minimum order', price_range=(3, 60), price_label='shelf price',
    ),
    Domain(
        owner_q='Who is the landlord of {x}?',
        request='report a repair at {x} to its landlord', event='repair',
        id='real-estate', title='Lettings book of Greywell Estates', item='flat', items='flats', id_prefix='FLT',
        id_label='listing number', category_label='district', categories=('Old Town', 'Riverside', 'Hillcrest'),
        names=('12 Cooper Lane', '3 Tanners Yard', 'Old Mint Flat 4', '8 Bellfounders Row', '27 Abbey Steps',
               'Wharf House Flat 9', '5 Lockkeeper Close', 'Mill Quay Flat 2', '14 Towpath Walk',
               'Heron Court Flat 6', '41 Summit Road', 'Larch View Flat 1', '9 Beacon Terrace', '2 Windmill Rise',
               'Crestfield Flat 11'),
        measure='area_m2', measure_label='floor area', unit='m²', measure_range=(28, 160), currency='GBP',
        date_field='available_from', date_q='From what date is {x} available?', flag_field='furnished',
        flag_q='Is {x} let furnished?', flag_word='furnished', owner='landlord', owners='landlords',
        owner_prefix='LL',
        owner_names=('Ottilie Brand', 'Fenwick Holdings', 'Harlan Moss', 'Quarry Lane Lettings', 'Ines Varga'),
        days_field='repair_days', days_label='repair response time',
        arrival_q='If the tenant of {x} reports a repair to the landlord on {d}, by what date should it be fixed?',
        measure_q='What is the floor area of {x}?', price_q='What is the monthly rent of {x}?',
        min_label='minimum deposit', price_range=(700, 3600), price_label='monthly rent',
    ),
    Domain(
        owner_q='Which supplier supplies {x}?',
        request='order {x} from its supplier', event='delivery',
        id='bakery', title='Ingredient store of the Oldmill Bakery', item='ingredient', items='ingredients',
        id_prefix='ING', id_label='stock code', category_label='storeroom', categories=('Flour', 'Dairy', 'Pantry'),
        names=('Stoneground Rye', 'Spelt Wholemeal', 'Strong White', 'Emmer Blend', 'Oat Flour', 'Cultured Butter',
               'Clotted Cream', 'Buttermilk', 'Skyr', 'Mascarpone', 'Dark Muscovado', 'Orange Blossom Honey',
               'Toasted Hazelnuts', 'Sour Cherries', 'Cacao Nibs'),
        measure='weight_kg', measure_label='stock', unit='kg', measure_range=(2, 400), currency='EUR',
        date_field='best_before', date_q='What is the best-before date of {x}?', flag_field='organic',
        flag_q='Is {x} organic?', flag_word='organic', owner='supplier', owners='suppliers', owner_prefix='SUP',
        owner_names=("Hobb's Mill", 'Greenacre Dairy', 'Pantry Direct', 'Wyndham Farm', 'Calder Granary'),
        days_field='lead_time_days', days_label='lead time',
        arrival_q='If we order {x} from its supplier on {d}, on what date should it arrive?',
        measure_q='How many kilograms of {x} do we have in stock?', price_q='What does a sack of {x} cost?',
        min_label='minimum order', price_range=(2, 40), kind_phrase='{item} in the {c} storeroom',
        price_label='sack price',
    ),
)
# fmt: on
