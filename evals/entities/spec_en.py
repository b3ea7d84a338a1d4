"""English set: The Three Musketeers (Dumas, tr. anon., Project Gutenberg #1257), chapters 1-50.
Graph written by hand from the text; question spans are anchored by a substring of the answering line."""

def N(id, type, name, aliases=(), **props):
    return {'id': id, 'type': type, 'name': name, 'aliases': list(aliases), 'properties': props}

NODES = [
    # people
    N('dartagnan', 'character', 'd’Artagnan', ['D’Artagnan', 'Chevalier d’Artagnan', 'the Gascon', 'the young Gascon'], origin='Gascony', role='cadet in the Guards'),
    N('athos', 'character', 'Athos', ['Comte de la Fere', 'the Comte de la Fere'], role='Musketeer'),
    N('porthos', 'character', 'Porthos', ['M. Porthos', 'Monsieur Porthos'], role='Musketeer'),
    N('aramis', 'character', 'Aramis', ['M. Aramis', 'Monsieur Aramis'], role='Musketeer'),
    N('treville', 'character', 'M. de Treville', ['Treville', 'Monsieur de Treville', 'M de Troisville', 'de Troisville'], title='Captain of the Musketeers'),
    N('richelieu', 'character', 'the cardinal', ['Cardinal Richelieu', 'Richelieu', 'his Eminence', 'Armand Duplessis', 'Red Duke', 'Cardinal Armand Duplessis'], title='Cardinal, first minister'),
    N('louis13', 'character', 'Louis XIII', ['the king', 'King Louis XIII', 'his Majesty'], title='King of France'),
    N('anne', 'character', 'Anne of Austria', ['the queen', 'her Majesty'], title='Queen of France'),
    N('buckingham', 'character', 'Duke of Buckingham', ['Buckingham', 'George Villiers', 'the duke'], title='Duke of Buckingham'),
    N('milady', 'character', 'Milady', ['Milady de Winter', 'Lady de Winter', 'Milady Clarik', 'Anne de Breuil', 'Countess de Winter', 'the woman of Meung']),
    N('lord_de_winter', 'character', 'Lord de Winter', ['de Winter', 'Lord Winter', 'the baron'], title='Baron'),
    N('constance', 'character', 'Mme. Bonacieux', ['Madame Bonacieux', 'Constance Bonacieux', 'Constance', 'the mercer’s wife'], role='seamstress to the queen'),
    N('bonacieux', 'character', 'M. Bonacieux', ['Bonacieux', 'Monsieur Bonacieux', 'the mercer'], role='mercer, landlord of d’Artagnan'),
    N('rochefort', 'character', 'Rochefort', ['Comte de Rochefort', 'the man of Meung', 'the Man of Meung'], role='agent of the cardinal'),
    N('planchet', 'character', 'Planchet', [], role='lackey'),
    N('grimaud', 'character', 'Grimaud', [], role='valet'),
    N('mousqueton', 'character', 'Mousqueton', ['Boniface'], role='valet'),
    N('bazin', 'character', 'Bazin', [], role='lackey'),
    N('kitty', 'character', 'Kitty', [], role='soubrette'),
    N('de_wardes', 'character', 'Comte de Wardes', ['de Wardes', 'M. de Wardes', 'Monsieur de Wardes']),
    N('lubin', 'character', 'Lubin', [], role='lackey'),
    N('jussac', 'character', 'Jussac', ['M. de Jussac'], role='Guard of the cardinal'),
    N('cahusac', 'character', 'Cahusac', [], role='Guard of the cardinal'),
    N('bicarat', 'character', 'Bicarat', ['Biscarat'], role='Guard of the cardinal'),
    N('bernajoux', 'character', 'Bernajoux', [], role='Guard of the cardinal'),
    N('cavois', 'character', 'M. de Cavois', ['Cavois', 'Monsieur de Cavois'], role='captain of the cardinal’s Guards'),
    N('la_chesnaye', 'character', 'La Chesnaye', [], role='valet of the king'),
    N('laporte', 'character', 'Laporte', ['La Porte', 'Monsieur Laporte'], role='confidential man of the queen'),
    N('seguier', 'character', 'M. Seguier', ['Seguier', 'Monsieur de Seguier'], title='Keeper of the Seals'),
    N('chevreuse', 'character', 'Madame de Chevreuse', ['Mme. de Chevreuse', 'Duchesse de Chevreuse', 'Chevreuse']),
    N('dessessart', 'character', 'M. Dessessart', ['Dessessart', 'Chevalier Dessessart', 'M. le Chevalier Dessessart'], role='captain of a company of Guards'),
    N('mme_coquenard', 'character', 'Mme. Coquenard', ['Madame Coquenard', 'the procurator’s wife'], role='procurator’s wife'),
    N('coquenard', 'character', 'M. Coquenard', ['Monsieur Coquenard', 'the procurator'], role='procurator'),
    N('felton', 'character', 'Felton', ['Mr. Felton', 'John Felton'], role='lieutenant'),
    N('patrick', 'character', 'Patrick', [], role='valet of Buckingham'),
    N('la_tremouille', 'character', 'M. de la Tremouille', ['de la Tremouille', 'Monsieur de la Tremouille']),
    N('vitray', 'character', 'Vitray', [], role='messenger of the cardinal'),
    N('germain', 'character', 'Germain', [], role='Swiss guard'),
    # organisations
    N('musketeers', 'organization', 'Musketeers', ['the king’s Musketeers', 'King’s Musketeers', 'Musketeers of the king'], kind='royal guard company'),
    N('cardinals_guards', 'organization', 'Guards of the cardinal', ['Guards of his Eminence', 'the cardinal’s Guards', 'cardinal’s Guardsmen', 'Guardsman of his Eminence', 'Guardsmen of the cardinal'], kind='guard company'),
    N('dessessart_guards', 'organization', 'company of Guards', ['company of M. le Chevalier Dessessart', 'company of M. Dessessart', 'the Guards'], kind='royal guard company'),
    N('huguenots', 'organization', 'Huguenots', ['Rochellais', 'the Huguenots'], kind='religious faction'),
    N('court_of_france', 'organization', 'the court', ['court of France'], kind='royal court'),
    # places
    N('meung', 'location', 'Meung', [], kind='market town'),
    N('gascony', 'location', 'Gascony', ['Bearn'], kind='province'),
    N('tarbes', 'location', 'Tarbes', [], kind='town'),
    N('paris', 'location', 'Paris', [], kind='city'),
    N('louvre', 'location', 'Louvre', ['the Louvre'], kind='palace'),
    N('rue_fossoyeurs', 'location', 'Rue des Fossoyeurs', [], kind='street'),
    N('rue_ferou', 'location', 'Rue Ferou', [], kind='street'),
    N('rue_vieux_colombier', 'location', 'Rue du Vieux-Colombier', [], kind='street'),
    N('luxembourg', 'location', 'Luxembourg', [], kind='palace'),
    N('carmes_deschaux', 'location', 'Carmes-Deschaux', [], kind='convent'),
    N('place_royale', 'location', 'Place Royale', [], kind='square'),
    N('chantilly', 'location', 'Chantilly', [], kind='town'),
    N('crevecoeur', 'location', 'Crevecoeur', [], kind='town'),
    N('amiens', 'location', 'Amiens', [], kind='city'),
    N('calais', 'location', 'Calais', [], kind='port'),
    N('london', 'location', 'London', [], kind='city'),
    N('dover', 'location', 'Dover', [], kind='port'),
    N('la_rochelle', 'location', 'La Rochelle', [], kind='city'),
    N('saint_cloud', 'location', 'St. Cloud', ['Saint-Cloud'], kind='village'),
    N('st_germain', 'location', 'St. Germain', [], kind='town'),
    N('england', 'location', 'England', [], kind='kingdom'),
    N('france', 'location', 'France', [], kind='kingdom'),
    N('tours', 'location', 'Tours', [], kind='city'),
    N('portsmouth', 'location', 'Portsmouth', [], kind='port'),
    N('pomme_de_pin', 'location', 'Pomme-de-Pin', [], kind='tavern'),
    # events
    N('siege_la_rochelle', 'event', 'Siege of La Rochelle', ['siege of La Rochelle'], year=1627),
    N('ballet_merlaison', 'event', 'La Merlaison', ['ballet of La Merlaison'], kind='court ballet'),
    N('bastion_st_gervais', 'event', 'Bastion Saint-Gervais', ['bastion Saint-Gervais'], kind='wager breakfast under fire'),
    N('duel_carmes', 'event', 'duel at the Carmes-Deschaux', [], kind='duel', chapter=5),
]

def E(s, r, t, **p):
    return {'source': s, 'relation': r, 'target': t, 'properties': p}

EDGES = [
    E('athos', 'MEMBER_OF', 'musketeers', role='Musketeer'),
    E('porthos', 'MEMBER_OF', 'musketeers', role='Musketeer'),
    E('aramis', 'MEMBER_OF', 'musketeers', role='Musketeer'),
    E('treville', 'LEADER_OF', 'musketeers', role='captain'),
    E('treville', 'MEMBER_OF', 'musketeers', role='captain'),
    E('dartagnan', 'MEMBER_OF', 'dessessart_guards', role='cadet'),
    E('dessessart', 'LEADER_OF', 'dessessart_guards', role='captain'),
    E('jussac', 'MEMBER_OF', 'cardinals_guards', role='commander of the detachment'),
    E('cahusac', 'MEMBER_OF', 'cardinals_guards', role='guard'),
    E('bicarat', 'MEMBER_OF', 'cardinals_guards', role='guard'),
    E('bernajoux', 'MEMBER_OF', 'cardinals_guards', role='guard'),
    E('cavois', 'MEMBER_OF', 'cardinals_guards', role='captain'),
    E('musketeers', 'SERVES', 'louis13'),
    E('dessessart_guards', 'SERVES', 'louis13'),
    E('cardinals_guards', 'SERVES', 'richelieu'),
    E('treville', 'SERVES', 'louis13'),
    E('dessessart', 'SERVES', 'louis13'),
    E('richelieu', 'SERVES', 'louis13', role='first minister'),
    E('planchet', 'SERVES', 'dartagnan', role='lackey'),
    E('grimaud', 'SERVES', 'athos', role='valet'),
    E('mousqueton', 'SERVES', 'porthos', role='valet'),
    E('bazin', 'SERVES', 'aramis', role='lackey'),
    E('lubin', 'SERVES', 'de_wardes', role='lackey'),
    E('kitty', 'SERVES', 'milady', role='soubrette'),
    E('patrick', 'SERVES', 'buckingham', role='confidential valet'),
    E('la_chesnaye', 'SERVES', 'louis13', role='confidential valet'),
    E('laporte', 'SERVES', 'anne', role='confidential man'),
    E('constance', 'SERVES', 'anne', role='seamstress'),
    E('rochefort', 'SERVES', 'richelieu', role='agent'),
    E('milady', 'SERVES', 'richelieu', role='agent'),
    E('bonacieux', 'SERVES', 'richelieu', role='spy'),
    E('vitray', 'SERVES', 'richelieu', role='messenger'),
    E('de_wardes', 'SERVES', 'richelieu'),
    E('seguier', 'SERVES', 'richelieu', role='Keeper of the Seals'),
    E('felton', 'SERVES', 'lord_de_winter', role='lieutenant'),
    E('germain', 'SERVES', 'anne', role='Swiss guard'),
    E('louis13', 'LEADER_OF', 'court_of_france'),
    E('anne', 'MEMBER_OF', 'court_of_france'),
    E('richelieu', 'MEMBER_OF', 'court_of_france'),
    E('treville', 'MEMBER_OF', 'court_of_france'),
    E('chevreuse', 'MEMBER_OF', 'court_of_france'),
    E('la_tremouille', 'MEMBER_OF', 'court_of_france'),
    E('seguier', 'MEMBER_OF', 'court_of_france'),
    E('buckingham', 'FRIEND_OF', 'huguenots', strength=0.5, note='English support for La Rochelle'),
    E('dartagnan', 'FRIEND_OF', 'athos', strength=0.95),
    E('dartagnan', 'FRIEND_OF', 'porthos', strength=0.9),
    E('dartagnan', 'FRIEND_OF', 'aramis', strength=0.9),
    E('athos', 'FRIEND_OF', 'porthos', strength=0.9),
    E('athos', 'FRIEND_OF', 'aramis', strength=0.9),
    E('porthos', 'FRIEND_OF', 'aramis', strength=0.9),
    E('treville', 'FRIEND_OF', 'louis13', strength=0.7),
    E('treville', 'FRIEND_OF', 'dartagnan', strength=0.6, note='protector; friend of his father'),
    E('chevreuse', 'FRIEND_OF', 'anne', strength=0.8),
    E('dartagnan', 'FRIEND_OF', 'lord_de_winter', strength=0.6, note='after their duel'),
    E('dartagnan', 'PARTNER_OF', 'constance', type='lovers'),
    E('buckingham', 'PARTNER_OF', 'anne', type='courtly love'),
    E('porthos', 'PARTNER_OF', 'mme_coquenard', type='liaison'),
    E('kitty', 'PARTNER_OF', 'dartagnan', type='unrequited love'),
    E('athos', 'PARTNER_OF', 'milady', type='married'),
    E('athos', 'FAMILY_OF', 'milady', kind='husband'),
    E('bonacieux', 'PARTNER_OF', 'constance', type='married'),
    E('bonacieux', 'FAMILY_OF', 'constance', kind='husband'),
    E('coquenard', 'PARTNER_OF', 'mme_coquenard', type='married'),
    E('louis13', 'PARTNER_OF', 'anne', type='married'),
    E('louis13', 'FAMILY_OF', 'anne', kind='husband'),
    E('lord_de_winter', 'FAMILY_OF', 'milady', kind='brother-in-law'),
    E('laporte', 'FAMILY_OF', 'constance', kind='godfather'),
    E('porthos', 'FAMILY_OF', 'mme_coquenard', kind='pretended cousin'),
    E('bonacieux', 'LANDLORD_OF', 'dartagnan'),
    E('musketeers', 'ENEMY_OF', 'cardinals_guards', reason='rivalry of the two guards', resolved=False),
    E('musketeers', 'ENEMY_OF', 'richelieu', reason='the Musketeers were known to be enemies of the cardinal', resolved=False),
    E('dartagnan', 'ENEMY_OF', 'rochefort', reason='insult at Meung', resolved=False),
    E('dartagnan', 'ENEMY_OF', 'milady', reason='deception and revenge', resolved=False),
    E('milady', 'ENEMY_OF', 'constance', reason='rival; abduction', resolved=False),
    E('dartagnan', 'ENEMY_OF', 'jussac', reason='duel at the Carmes-Deschaux', resolved=False),
    E('athos', 'ENEMY_OF', 'cahusac', reason='duel at the Carmes-Deschaux', resolved=False),
    E('porthos', 'ENEMY_OF', 'bicarat', reason='duel at the Carmes-Deschaux', resolved=False),
    E('dartagnan', 'ENEMY_OF', 'bernajoux', reason='duel at the Hotel la Tremouille', resolved=False),
    E('dartagnan', 'ENEMY_OF', 'de_wardes', reason='duel near Calais', resolved=False),
    E('dartagnan', 'ENEMY_OF', 'lord_de_winter', reason='duel', resolved=True),
    E('richelieu', 'ENEMY_OF', 'buckingham', reason='politics and the queen', resolved=False),
    E('richelieu', 'ENEMY_OF', 'anne', reason='court intrigue', resolved=False),
    E('athos', 'ENEMY_OF', 'milady', reason='the fleur-de-lis; betrayal', resolved=False),
    E('lord_de_winter', 'ENEMY_OF', 'milady', reason='she wanted him killed to inherit', resolved=False),
    E('richelieu', 'ENEMY_OF', 'huguenots', reason='siege of La Rochelle', resolved=False),
    E('dartagnan', 'FROM', 'gascony'),
    E('dartagnan', 'FROM', 'tarbes'),
    E('treville', 'FROM', 'gascony'),
    E('tarbes', 'LOCATED_IN', 'gascony'),
    E('dartagnan', 'LOCATED_IN', 'rue_fossoyeurs', context='lodging'),
    E('bonacieux', 'LOCATED_IN', 'rue_fossoyeurs', context='house'),
    E('athos', 'LOCATED_IN', 'rue_ferou', context='lodging'),
    E('porthos', 'LOCATED_IN', 'rue_vieux_colombier', context='lodging'),
    E('treville', 'LOCATED_IN', 'rue_vieux_colombier', context='hotel'),
    E('milady', 'LOCATED_IN', 'place_royale', context='residence'),
    E('porthos', 'LOCATED_IN', 'chantilly', context='left wounded at an inn'),
    E('aramis', 'LOCATED_IN', 'crevecoeur', context='left wounded'),
    E('athos', 'LOCATED_IN', 'amiens', context='shut in the inn cellar'),
    E('buckingham', 'LOCATED_IN', 'london'),
    E('anne', 'LOCATED_IN', 'louvre'),
    E('louis13', 'LOCATED_IN', 'louvre'),
    E('rue_fossoyeurs', 'LOCATED_IN', 'paris'),
    E('rue_ferou', 'LOCATED_IN', 'paris'),
    E('rue_vieux_colombier', 'LOCATED_IN', 'paris'),
    E('louvre', 'LOCATED_IN', 'paris'),
    E('luxembourg', 'LOCATED_IN', 'paris'),
    E('carmes_deschaux', 'LOCATED_IN', 'paris'),
    E('place_royale', 'LOCATED_IN', 'paris'),
    E('pomme_de_pin', 'LOCATED_IN', 'paris'),
    E('paris', 'LOCATED_IN', 'france'),
    E('meung', 'LOCATED_IN', 'france'),
    E('chantilly', 'LOCATED_IN', 'france'),
    E('crevecoeur', 'LOCATED_IN', 'france'),
    E('amiens', 'LOCATED_IN', 'france'),
    E('calais', 'LOCATED_IN', 'france'),
    E('la_rochelle', 'LOCATED_IN', 'france'),
    E('tours', 'LOCATED_IN', 'france'),
    E('saint_cloud', 'LOCATED_IN', 'france'),
    E('st_germain', 'LOCATED_IN', 'france'),
    E('gascony', 'LOCATED_IN', 'france'),
    E('london', 'LOCATED_IN', 'england'),
    E('dover', 'LOCATED_IN', 'england'),
    E('portsmouth', 'LOCATED_IN', 'england'),
    E('huguenots', 'LOCATED_IN', 'la_rochelle'),
    E('duel_carmes', 'LOCATED_IN', 'carmes_deschaux'),
    E('siege_la_rochelle', 'LOCATED_IN', 'la_rochelle'),
    E('bastion_st_gervais', 'LOCATED_IN', 'la_rochelle'),
    E('ballet_merlaison', 'LOCATED_IN', 'paris'),
    E('dartagnan', 'PARTICIPATED_IN', 'duel_carmes'),
    E('athos', 'PARTICIPATED_IN', 'duel_carmes'),
    E('porthos', 'PARTICIPATED_IN', 'duel_carmes'),
    E('aramis', 'PARTICIPATED_IN', 'duel_carmes'),
    E('jussac', 'PARTICIPATED_IN', 'duel_carmes'),
    E('cahusac', 'PARTICIPATED_IN', 'duel_carmes'),
    E('bicarat', 'PARTICIPATED_IN', 'duel_carmes'),
    E('louis13', 'PARTICIPATED_IN', 'ballet_merlaison'),
    E('anne', 'PARTICIPATED_IN', 'ballet_merlaison'),
    E('richelieu', 'PARTICIPATED_IN', 'ballet_merlaison'),
    E('dartagnan', 'PARTICIPATED_IN', 'ballet_merlaison'),
    E('constance', 'PARTICIPATED_IN', 'ballet_merlaison'),
    E('louis13', 'PARTICIPATED_IN', 'siege_la_rochelle'),
    E('richelieu', 'PARTICIPATED_IN', 'siege_la_rochelle'),
    E('dartagnan', 'PARTICIPATED_IN', 'siege_la_rochelle'),
    E('athos', 'PARTICIPATED_IN', 'siege_la_rochelle'),
    E('porthos', 'PARTICIPATED_IN', 'siege_la_rochelle'),
    E('aramis', 'PARTICIPATED_IN', 'siege_la_rochelle'),
    E('dessessart_guards', 'PARTICIPATED_IN', 'siege_la_rochelle'),
    E('musketeers', 'PARTICIPATED_IN', 'siege_la_rochelle'),
    E('huguenots', 'PARTICIPATED_IN', 'siege_la_rochelle'),
    E('athos', 'PARTICIPATED_IN', 'bastion_st_gervais'),
    E('porthos', 'PARTICIPATED_IN', 'bastion_st_gervais'),
    E('aramis', 'PARTICIPATED_IN', 'bastion_st_gervais'),
    E('dartagnan', 'PARTICIPATED_IN', 'bastion_st_gervais'),
    E('grimaud', 'PARTICIPATED_IN', 'bastion_st_gervais'),
]

def graph():
    return NODES, EDGES

c = lambda n: 'chapter-%03d.txt' % n
Q = []
def q(family, query, *spans):
    Q.append({'id': 'en-%s-%03d' % (family.replace('_', '-'), 1 + sum(1 for x in Q if x['family'] == family)),
              'family': family, 'query': query, 'spans': list(spans)})

# member_of
q('member_of', "Which company was d'Artagnan admitted to as a cadet?", (c(7), 'admit d’Artagnan as a cadet in his company of Guards'))
q('member_of', 'who is m. de treville captain of', (c(1), 'captain of the Musketeers."'), (c(2), 'entered the apartment of the captain of the Musketeers'))
q('member_of', 'Jussac - which troop does he command?', (c(5), 'commanded by M. de Jussac, turned the corner'))
q('member_of', "Is Cahusac one of the cardinal's men?", (c(5), 'Athos fixed upon a certain Cahusac'))
q('member_of', 'Bernajoux guardsman of whom', (c(6), 'as he had told the Guardsman of his Eminence'))
q('member_of', 'Who does Constance Bonacieux work for at the Louvre?', (c(8), 'goddaughter of Monsieur Laporte, the confidential man of the queen'), (c(12), 'was known to belong to the queen'))
q('member_of', "Planchet is whose lackey?", (c(7), 'Planchet, d’Artagnan’s valet, supported'))
q('member_of', 'Grimaud servant of which musketeer', (c(7), 'had a valet whom he had trained in his service'))
q('member_of', 'Who did Mousqueton (Boniface) enter the service of?', (c(7), 'entered the service of Porthos'))
q('member_of', "Bazin, who's his master?", (c(7), 'like that of his lackey was called Bazin'))
q('member_of', 'Who does Lubin serve?', (c(30), 'it is poor Lubin, the lackey of the Comte de Wardes'))
q('member_of', 'Whose confidential valet is Patrick?', (c(21), 'His confidential valet appeared'))
q('member_of', 'La Chesnaye works for which household?', (c(6), 'confidential valet, who never left the door'))
q('member_of', 'Which side is Rochefort on — king or cardinal?', (c(14), 'The Comte de Rochefort bowed like a man who acknowledges the superiority of the master'), (c(14), 'Rochefort, all is not lost'))
q('member_of', "Bonacieux's wife, what is her position in the queen's household?", (c(8), 'I have a wife who is seamstress to the queen'))
q('member_of', "Who is the Keeper of the Seals?", (c(16), '16 IN WHICH M. SEGUIER, KEEPER OF THE SEALS'), (c(16), 'charge Monsieur de Seguier, the keeper of the seals'))
# co_member
q('co_member', 'Who are Athos\'s fellow Musketeers called to Treville\'s office?', (c(3), '"Athos! Porthos! Aramis!"'), (c(3), 'When the two Musketeers had entered'))
q('co_member', "Which other Guards of the cardinal fought alongside Jussac at the Carmes-Deschaux?", (c(5), 'Athos fixed upon a certain Cahusac'), (c(5), 'Bicarat and Porthos had just made counterhits'))
q('co_member', "Who else ended up in M. Dessessart's company with d'Artagnan?", (c(7), 'The company of M. le Chevalier Dessessart thus received four instead of one'))
q('co_member', 'the four lackeys of the musketeers and d artagnan', (c(19), 'Planchet, Grimaud, Mousqueton, and Bazin set off at full speed'))
q('co_member', "Besides Constance, who else in the queen's confidence placed her at court?", (c(8), 'goddaughter of Monsieur Laporte'))
q('co_member', 'Other agents working for the cardinal besides Rochefort', (c(14), 'You will deliver this letter to Milady'), (c(14), 'And the cardinal made him a sign with his hand, to which Bonacieux replied'))
q('co_member', "Who were Treville's three favourite Musketeers that the king complained about?", (c(3), '"Athos! Porthos! Aramis!"'), (c(3), 'it is true that the Musketeers make but a miserable figure at court'))
# together
q('together', 'Athos and Milady face to face', (c(45), 'murmured Milady, becoming exceedingly pale'), (c(45), 'the Comte de la Fere in person, who comes expressly'), (c(45), 'as the name Milady Clarik concealed Anne de Breuil'))
q('together', "scenes with d'Artagnan and Kitty", (c(33), '"If Monsieur Chevalier would follow me?" said Kitty'), (c(33), 'And Kitty, who had not let go the hand of d’Artagnan'))
q('together', 'Buckingham meets the queen', (c(12), 'a door concealed in the tapestry opened, and a woman appeared'), (c(12), 'If you loved me, you would view all this otherwise'))
q('together', 'passages with Lord de Winter and his sister-in-law together', (c(50), 'During the time which Lord de Winter took to shut the door'), (c(50), 'Lord de Winter adopted the same tactics as Milady'))
q('together', 'Porthos and the procurator’s wife at church', (c(29), 'Porthos went before her, and instead of a finger'), (c(29), 'Porthos was taking his revenge for the defeat of Chantilly'))
q('together', 'Planchet and Lubin chatting', (c(30), 'Planchet dismounted and went straight up to Lubin'))
q('together', "d'Artagnan fights Bernajoux", (c(6), '"Well, then, Monsieur Bernajoux," said d’Artagnan'), (c(6), 'So the two swords were crossed close to the hilts'))
q('together', 'Athos and Jussac exchange words before the duel', (c(5), 'said Athos, full of rancor, for Jussac was one of the aggressors'))
q('together', "Mme. Bonacieux and the duke at the Louvre", (c(12), 'Mme. Bonacieux and the duke entered the Louvre without difficulty'))
q('together', 'Felton and Lord de Winter', (c(50), '"Call Mr. Felton," said he'), (c(50), 'making a sign to Felton, who followed him'))
q('together', 'the king and the queen at the ball', (c(22), 'He went straight to the queen, and in an altered voice said'))
q('together', 'Treville and La Chesnaye in the king\'s antechamber', (c(6), 'M. de Treville found La Chesnaye'))
q('together', 'Porthos Aramis and Athos at Treville\'s', (c(2), 'You know what Athos told you the other day'), (c(2), '"Porthos, you are as vain as Narcissus; I plainly tell you so," replied Aramis'))
# connection
q('connection', 'How is Milady connected to Lord de Winter?', (c(31), 'I will present you to my sister, Milady Clarik'), (c(50), 'she congratulated herself upon having fallen into the hands of her brother-in-law'))
q('connection', 'What links Athos to Milady?', (c(45), 'Was it not so you were called when your honored brother married us?'))
q('connection', 'how is constance related to laporte', (c(8), 'goddaughter of Monsieur Laporte'))
q('connection', "How does d'Artagnan know M. Bonacieux?", (c(8), '"Possibly, monsieur. I am your landlord."'), (c(8), 'you are my landlord?'))
q('connection', 'What is the link between Treville and the king?', (c(2), 'He was the friend of the king, who honored highly'))
q('connection', "How did d'Artagnan get to know Lord de Winter?", (c(31), 'we do not know who you are. We cannot fight with such names'), (c(31), 'And now, my young friend, for you will permit me'))
q('connection', 'Connection between Milady and the cardinal', (c(14), 'You will deliver this letter to Milady'), (c(33), 'As to the cause which was near making Milady lose her credit with the cardinal'))
q('connection', 'How did Bonacieux come to work for the cardinal?', (c(14), 'And the cardinal made him a sign with his hand, to which Bonacieux replied'), (c(17), 'Rochefort called him his friend, his dear Bonacieux'))
q('connection', 'Porthos and Madame Coquenard - what is their relationship supposed to be?', (c(32), 'The cousin was received with resignation'))
q('connection', 'How is Kitty connected to Milady?', (c(33), 'There is nothing but a wainscot between my chamber and Milady’s'))
q('connection', 'How is Felton connected to Lord de Winter?', (c(50), '"Call Mr. Felton," said he'), (c(50), 'making a sign to Felton, who followed him'))
q('connection', 'What connects Treville to Gascony?', (c(2), 'M de Troisville, as his family was still called in Gascony'))
q('connection', 'how is the comte de wardes connected to Milady', (c(33), 'the interception of letters addressed to the Comte'))
q('connection', "What is the link between the Musketeers and the cardinal's Guards?", (c(2), 'taking great pleasure in annoying the Guards of the cardinal'), (c(6), 'the Musketeers were known to be enemies of the cardinal'))
# relation
q('relation', "Who is Milady's brother-in-law?", (c(50), 'she congratulated herself upon having fallen into the hands of her brother-in-law'))
q('relation', "Who is the mercer's wife married to?", (c(8), 'I have a wife who is seamstress to the queen'), (c(8), 'my wife was abducted yesterday morning'))
q('relation', 'Who is the enemy of the Musketeers?', (c(6), 'the Musketeers were known to be enemies of the cardinal'))
q('relation', "Who did d'Artagnan wound on the road to Calais?", (c(20), 'It was in the name of Comte de Wardes'))
q('relation', 'who wounded athos in the carmes deschaux fight', (c(5), 'Athos, wounded anew by Cahusac'))
q('relation', "Who was Porthos's opponent in the duel with the Guards?", (c(5), 'Bicarat and Porthos had just made counterhits'))
q('relation', "Who is Mme. Coquenard's husband?", (c(32), 'M. Coquenard, firm upon his legs'))
q('relation', 'Where does Athos live?', (c(7), 'Athos dwelt in the Rue Ferou'))
q('relation', 'Where is Porthos\'s apartment?', (c(7), 'Porthos lived in an apartment, large in size'))
q('relation', "Where is M. de Treville's hotel?", (c(2), 'The court of his hotel, situated in the Rue du Vieux-Colombier'))
q('relation', "Where did d'Artagnan leave Porthos on the way to London, and find him again?", (c(25), 'our two travelers arrived at Chantilly without any accident'))
q('relation', 'Which town did the story open in?', (c(1), 'the market town of Meung, in which the author'))
q('relation', 'Which Huguenot city did the cardinal besiege?', (c(41), 'The Siege of La Rochelle was one of the great political events'), (c(41), 'there only remained La Rochelle'))
q('relation', 'Who sent Cavois to summon d’Artagnan?', (c(40), 'you received a visit from Cavois," resumed the cardinal'), (c(39), 'I have already received by Monsieur de Cavois a similar invitation from his Eminence'))
q('relation', "Who is Milady's maid?", (c(31), 'he again met the pretty Kitty; that was the name of the SOUBRETTE'), (c(33), 'There is nothing but a wainscot between my chamber and Milady’s'))
q('relation', 'Who is Athos really? (real name)', (c(45), 'And the name of Athos as well concealed the Comte de la Fere'))

QUESTIONS = Q
